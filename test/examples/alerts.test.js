'use strict';

const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { ROOT, REGISTER, FIXTURES, cleanEnv, freePort, stopChild, parsePrometheus, sampleValue, scrape } = require('../helpers/child');
const { withDnsServer } = require('../helpers/dns-server');
const { resolvConf, spawnInNamespace } = require('../helpers/namespace');
const { prometheusSupport, promtoolTestRules, requirePrometheus, startPrometheus } = require('../helpers/prometheus');

const DIR = path.join(ROOT, 'examples', 'prometheus');
const RULES = path.join(DIR, 'alerts.yml');
const TESTS = path.join(DIR, 'alerts.test.yml');

/** Alert names in a rule file, in order. alerts.yml is ours, so one `- alert: Name` per rule. */
function alertNames(text) {
  return [...text.matchAll(/^\s*- alert:\s*(\S+)\s*$/gm)].map((m) => m[1]);
}

/**
 * The alert_rule_test cases of a promtool test file: { alertname, fires } per case, where fires
 * is false for `exp_alerts: []`. Every case in alerts.test.yml starts with `- eval_time:`.
 */
function ruleTestCases(text) {
  return text.split(/^\s*- eval_time:/m).slice(1).map((block) => {
    const name = /^\s*alertname:\s*(\S+)\s*$/m.exec(block);
    assert.ok(name, `a test case without alertname:\n${block}`);
    const empty = /^\s*exp_alerts:\s*\[\]\s*$/m.test(block);
    const listed = /^\s*exp_alerts:\s*$/m.test(block) && /^\s*- exp_labels:/m.test(block);
    assert.ok(empty !== listed, `case for ${name[1]} must have either exp_alerts: [] or expected alerts:\n${block}`);
    return { alertname: name[1], fires: listed };
  });
}

/**
 * A copy of alerts.yml where one rule's `for:` is replaced, the expression untouched.
 * @returns {string}
 */
function withFor(text, alertname, duration) {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.trim() === `- alert: ${alertname}`);
  assert.ok(start >= 0, `no rule ${alertname}`);
  let replaced = 0;
  for (let i = start + 1; i < lines.length && !/^\s*- (alert|record):/.test(lines[i]); i++) {
    if (/^\s*for:\s*\S+\s*$/.test(lines[i])) {
      lines[i] = lines[i].replace(/for:\s*\S+/, `for: ${duration}`);
      replaced++;
    }
  }
  assert.equal(replaced, 1, `expected one for: in ${alertname}`);
  return lines.join('\n');
}

function getJson(url) {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body));
        } catch (err) {
          reject(err);
        }
      });
    }).on('error', reject);
  });
}

describe('examples/prometheus/alerts.yml', function () {
  it('every rule has promtool test cases where it fires (exact labels and annotations) and where it does not', () => {
    const names = alertNames(fs.readFileSync(RULES, 'utf8'));
    assert.ok(names.length >= 6, `rules: ${names}`);
    assert.equal(new Set(names).size, names.length, 'alert names are unique');
    const cases = ruleTestCases(fs.readFileSync(TESTS, 'utf8'));
    for (const name of names) {
      const mine = cases.filter((c) => c.alertname === name);
      assert.ok(mine.some((c) => c.fires), `${name}: no test case where it fires`);
      assert.ok(mine.some((c) => !c.fires), `${name}: no test case where it does not fire`);
    }
    for (const c of cases) assert.ok(names.includes(c.alertname), `test case for unknown alert ${c.alertname}`);
  });

  describe('with promtool', function () {
    before(function () {
      requirePrometheus(this);
    });

    it('passes promtool check rules', async () => {
      const { promtool } = prometheusSupport();
      const output = await new Promise((resolve, reject) => {
        execFile(promtool, ['check', 'rules', RULES], { timeout: 30000 }, (err, stdout, stderr) => {
          if (err) reject(new Error(`promtool check rules failed: ${stdout}${stderr}`));
          else resolve(stdout + stderr);
        });
      });
      assert.match(output, new RegExp(`SUCCESS: ${alertNames(fs.readFileSync(RULES, 'utf8')).length} rules found`));
    });

    it('passes its promtool unit tests (examples/prometheus/alerts.test.yml)', async () => {
      const r = await promtoolTestRules(TESTS);
      assert.ok(r.ok, r.output);
      assert.match(r.output, /SUCCESS/);
    });
  });

  describe('in a real Prometheus, against an app with thousands of pending lookups (the klarna state)', function () {
    let app;
    let promStarting;
    let tmp;

    before(function () {
      requirePrometheus(this);
    });
    // Runs before the DNS server's own after(): the app goes first.
    after(async () => {
      const prom = promStarting && await promStarting.catch(() => null);
      if (prom) await prom.close();
      await stopChild(app);
      if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
    });
    // Answered after 1 s: with 2 DNS slots, 2 lookups finish a second and 3000 stay pending.
    withDnsServer({ address: '127.0.0.6', names: { '*.backlog.test': { a: '127.0.0.1', delayMs: 1000 } } });

    it('UvscopeDnsLookupBacklog fires, through the alerts API, with the instance and the backlog in its text', async function () {
      this.timeout(40000);
      const started = Date.now();
      const port = await freePort();
      app = spawnInNamespace({
        resolvConf: resolvConf({ nameserver: '127.0.0.6' }),
        args: ['--require', REGISTER, path.join(FIXTURES, 'backlog-app.js')],
        env: cleanEnv({ UVSCOPE_PROMETHEUS_PORT: String(port), BACKLOG_NAME: 'statsd.backlog.test', BACKLOG_COUNT: '3000', BACKLOG_MAX_MS: '45000' }),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      app.stderr.on('data', (d) => (stderr += d));

      // The real expression from alerts.yml; only this rule's `for: 1m` is shortened to 2s, so
      // the test does not wait a minute.
      tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'uvscope-alerts-'));
      const copy = path.join(tmp, 'alerts.yml');
      await fsp.writeFile(copy, withFor(await fsp.readFile(RULES, 'utf8'), 'UvscopeDnsLookupBacklog', '2s'));

      // Started now, so its ~5 s until the first scrape overlaps the check of the app below.
      promStarting = startPrometheus({ targets: [`127.0.0.1:${port}`], ruleFiles: [copy], scrapeIntervalMs: 1000, evaluationIntervalMs: 1000 });
      promStarting.catch(() => {}); // awaited below; a rejection must not go unhandled meanwhile

      // Ground truth from the app's own endpoint: the backlog is there, on the default pool.
      let samples;
      for (;;) {
        samples = parsePrometheus((await scrape(port)).text);
        if (sampleValue(samples, 'nodejs_uv_requests_active', { type: 'GetAddrInfoReqWrap' }) >= 2900) break;
        assert.ok(Date.now() - started < 15000, `no backlog in the app: ${JSON.stringify(samples.filter((s) => s.name.startsWith('nodejs_uv_')))}\n${stderr}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(sampleValue(samples, 'nodejs_uv_threadpool_dns_slots'), 2);

      const prom = await promStarting;
      let alert;
      let last = [];
      while (!alert) {
        last = await prom.alerts();
        alert = last.find((a) => a.labels.alertname === 'UvscopeDnsLookupBacklog' && a.state === 'firing');
        if (!alert) {
          assert.ok(Date.now() - started < 30000, `UvscopeDnsLookupBacklog not firing after 30 s; alerts: ${JSON.stringify(last)}\n${prom.logs().slice(-2000)}`);
          await new Promise((r) => setTimeout(r, 250));
        }
      }
      assert.deepEqual(alert.labels, { alertname: 'UvscopeDnsLookupBacklog', severity: 'critical', job: 'uvscope', instance: `127.0.0.1:${port}` });
      const value = Number(alert.value);
      assert.ok(value >= 2900 && value <= 3001, `alert value ${alert.value}`);
      assert.equal(alert.annotations.summary, `uvscope 127.0.0.1:${port}: ${Math.round(value)} dns.lookup calls pending (GetAddrInfoReqWrap backlog)`);
      assert.match(alert.annotations.description, /more than 10 for each of the 2 threads libuv lets run getaddrinfo/);
      assert.match(alert.annotations.description, /Cache or coalesce the lookups/);

      // Prometheus evaluated the rule as written in alerts.yml: same expression, for: 2s.
      const rules = await getJson(`${prom.url}/api/v1/rules?type=alert`);
      const loaded = rules.data.groups.flatMap((g) => g.rules);
      assert.deepEqual(loaded.map((r) => r.name), alertNames(fs.readFileSync(RULES, 'utf8')));
      const backlog = loaded.find((r) => r.name === 'UvscopeDnsLookupBacklog');
      assert.equal(backlog.duration, 2);
      assert.match(backlog.query, /nodejs_uv_requests_active\{type="GetAddrInfoReqWrap"\}/);
      // No other rule fires on this app (they have their real `for:` of minutes, or do not match).
      assert.deepEqual(last.filter((a) => a.state === 'firing').map((a) => a.labels.alertname), ['UvscopeDnsLookupBacklog']);
    });
  });

  describe('in a real Prometheus, against an app whose pool is held by pbkdf2 (the crypto state)', function () {
    let app;
    let prom;
    let tmp;

    before(function () {
      requirePrometheus(this);
    });

    after(async () => {
      if (prom) await prom.close();
      if (app && app.exitCode === null && app.signalCode === null) {
        const exited = new Promise((resolve) => app.once('exit', resolve));
        process.kill(app.pid, 'SIGKILL');
        await exited;
      }
      if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
    });

    it('UvscopeThreadpoolSaturated fires with the probe\'s mean wait, and no DNS rule does', async function () {
      this.timeout(60000);
      const started = Date.now();
      const port = await freePort();
      // 8 keep-alive clients hashing with pbkdf2 (~65 ms each) on the default pool of 4, for
      // longer than the test lasts (the test kills it).
      app = require('node:child_process').spawn(process.execPath, ['--require', REGISTER, path.join(FIXTURES, 'threadpool-app.js')], {
        env: cleanEnv({ UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '250', FIXTURE_SCENARIO: 'pbkdf2', FIXTURE_SECONDS: '55' }),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      app.stderr.on('data', (d) => (stderr += d));

      tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'uvscope-alerts-'));
      const copy = path.join(tmp, 'alerts.yml');
      await fsp.writeFile(copy, withFor(await fsp.readFile(RULES, 'utf8'), 'UvscopeThreadpoolSaturated', '2s'));
      prom = await startPrometheus({ targets: [`127.0.0.1:${port}`], ruleFiles: [copy], scrapeIntervalMs: 1000, evaluationIntervalMs: 1000 });

      let alert;
      let last = [];
      while (!alert) {
        last = await prom.alerts();
        alert = last.find((a) => a.labels.alertname === 'UvscopeThreadpoolSaturated' && a.state === 'firing');
        if (!alert) {
          assert.ok(Date.now() - started < 45000, `UvscopeThreadpoolSaturated not firing after 45 s; alerts: ${JSON.stringify(last)}\n${stderr}\n${prom.logs().slice(-2000)}`);
          await new Promise((r) => setTimeout(r, 250));
        }
      }
      assert.deepEqual(alert.labels, { alertname: 'UvscopeThreadpoolSaturated', severity: 'warning', job: 'uvscope', instance: `127.0.0.1:${port}` });
      // Ground truth from the app's own endpoint: the work probe's mean wait, as Prometheus reads it.
      const samples = parsePrometheus((await scrape(port)).text);
      const sum = sampleValue(samples, 'nodejs_uv_threadpool_queue_wait_seconds_sum', { queue: 'work' });
      const count = sampleValue(samples, 'nodejs_uv_threadpool_queue_wait_seconds_count', { queue: 'work' });
      assert.ok(count > 0 && sum / count > 0.05, `the app's work probe: ${sum} s over ${count} probes`);
      const value = Number(alert.value);
      assert.ok(value > 0.05 && value < 10, `alert value ${alert.value}`);
      assert.match(alert.annotations.summary, new RegExp(`^uvscope 127\\.0\\.0\\.1:${port}: threadpool jobs wait \\d+(\\.\\d+)?m?s for a free thread$`));
      assert.match(alert.annotations.description, /of the 4 threadpool threads: the pool is held/);
      // The lookups wait behind the hashes, but no DNS rule fires (they have their real for: of
      // minutes, and the backlog rule needs 1000 lookups).
      assert.deepEqual(last.filter((a) => a.state === 'firing').map((a) => a.labels.alertname), ['UvscopeThreadpoolSaturated']);
    });
  });
});
