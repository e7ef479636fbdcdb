'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const { parseArgs, nodeOptionsWithPreload, snapshotUrl } = require('../../bin/uvscope');
const { ROOT, FIXTURES, runNode, lastJson, freePort, stopChild, parsePrometheus, sampleValue } = require('../helpers/child');
const { spawnWeighted } = require('../helpers/cgroup');

const BIN = path.join(ROOT, 'bin', 'uvscope.js');

describe('bin/uvscope', () => {
  it('parses flags before the command, with or without --', () => {
    assert.deepEqual(parseArgs(['--port', '9999', '--', 'node', 'app.js', '--port', '1']), {
      env: { UVSCOPE_PROMETHEUS_PORT: '9999' }, command: ['node', 'app.js', '--port', '1'], help: false,
    });
    assert.deepEqual(parseArgs(['--exporters=none', 'node', 'app.js']).env, { UVSCOPE_EXPORTERS: 'none' });
    assert.match(parseArgs(['--bogus', 'node']).error, /unknown option --bogus/);
    assert.match(parseArgs(['--port']).error, /--port needs a value/);
  });

  it('keeps existing NODE_OPTIONS and quotes the preload path', () => {
    assert.match(nodeOptionsWithPreload('--max-old-space-size=100'), /^--max-old-space-size=100 --require ".*register\.js"$/);
  });

  it('npx uvscope --port N -- node app.js runs the app with the agent, and passes its exit code through', async () => {
    const port = await freePort();
    const r = await runNode([BIN, '--port', String(port), '--', process.execPath, path.join(FIXTURES, 'scrape-self.js')], {
      env: { UVSCOPE_PROMETHEUS_PORT: String(port) },
    });
    assert.equal(r.code, 0, r.stderr);
    const out = lastJson(r.stdout);
    assert.equal(sampleValue(parsePrometheus(out.text), 'nodejs_uv_threadpool_dns_slots'), 2);
    const failing = await runNode([BIN, '--', process.execPath, '-e', 'process.exit(3)'], { env: { UVSCOPE_EXPORTERS: 'none' } });
    assert.equal(failing.code, 3);
    const usage = await runNode([BIN]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /usage: uvscope/);
  });
});

describe('uvscope report', () => {
  it('prints the findings of a running agent from /snapshot.json', async () => {
    const port = await freePort();
    const { cleanEnv, REGISTER } = require('../helpers/child');
    // 800 lookups a second of one name in bursts of 80: dns-no-cache (on their wait for a DNS
    // slot, as in the test below). In a cgroup of ten times the default CPU weight where one can
    // be made: next to other sessions' load (a load average of 10) the app's loop was on a CPU 6 %
    // of the time, its lookups' time the loop's (eventloop-blocked, dns-tail-latency instead).
    const app = spawnWeighted(process.execPath, ['--require', REGISTER, '-e', `
      const dns = require('dns');
      setInterval(() => { for (let i = 0; i < 80; i++) dns.lookup('localhost', () => {}); }, 100);
      console.log('ready');
    `], { env: cleanEnv({ UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '200' }), stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise((r) => app.stdout.once('data', r));
      await new Promise((r) => setTimeout(r, 1200));
      const r = await runNode([BIN, 'report', '--url', `http://127.0.0.1:${port}/snapshot.json`]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^uvscope report, pid \d+/);
      assert.match(r.stdout, /threadpool: size 4, DNS slots 2/);
      assert.match(r.stdout, /\[(info|warning|critical)\] dns-no-cache: localhost is looked up \d+(\.\d)? times a second/);
      assert.match(r.stdout, /\n {2}impact: [\d.]+ ms lost per second, \d+ affected, score [\d.]+\n/);
      // Each lookup's time split in two, per hostname (on a machine busy enough that pool threads
      // waited for a CPU, the second part is not called resolving: lib/report/text.js).
      assert.match(r.stdout, /\n {2}localhost: \d+ lookups, (\d+ ended, )?[\d.]+ ms = [\d.]+ ms waiting for a DNS slot \+ [\d.]+ ms (resolving|on a pool thread, of which pool threads spent \d+ % waiting for a CPU); recent \d+: p50 [\d.]+ ms, p99 [\d.]+ ms, stddev [\d.]+ ms\n/);
      const down = await runNode([BIN, 'report', '--url', `http://127.0.0.1:${await freePort()}/snapshot.json`]);
      assert.equal(down.code, 1);
      assert.match(down.stderr, /uvscope report: cannot read http:\/\/127\.0\.0\.1:\d+\/snapshot\.json/);
    } finally {
      await stopChild(app);
    }
  });

  it('takes the agent\'s base URL as well as the snapshot\'s', () => {
    for (const typed of ['http://127.0.0.1:9464', 'http://127.0.0.1:9464/', '127.0.0.1:9464', 'http://127.0.0.1:9464/snapshot.json']) {
      assert.equal(snapshotUrl(typed), 'http://127.0.0.1:9464/snapshot.json', typed);
    }
    assert.equal(snapshotUrl('http://[::1]:9000'), 'http://[::1]:9000/snapshot.json');
    assert.equal(snapshotUrl('http://proxy.internal/uvscope/snapshot.json'), 'http://proxy.internal/uvscope/snapshot.json');
  });

  for (const exporter of ['prometheus', 'datadog', 'otlp']) {
    it(`reads the findings of an agent running with UVSCOPE_EXPORTERS=${exporter}, at its base URL`, async () => {
      const port = await freePort();
      const { cleanEnv, REGISTER } = require('../helpers/child');
      const vars = {
        prometheus: { UVSCOPE_PROMETHEUS_PORT: String(port) },
        // Nothing listens on these ports: the agent's sends fail quietly, the snapshot is served.
        datadog: { UVSCOPE_SNAPSHOT_PORT: String(port), DD_AGENT_HOST: '127.0.0.1', DD_DOGSTATSD_PORT: String(await freePort()) },
        otlp: { UVSCOPE_SNAPSHOT_PORT: String(port), OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}`, OTEL_METRIC_EXPORT_INTERVAL: '600000' },
      }[exporter];
      // 800 lookups a second of one name, in bursts of 80 on 2 DNS slots: dns-no-cache, on their
      // wait for a slot (bursts of 40 waited 0.4 to 0.6 ms each, 0.16 to 0.18 s per second on Node
      // 20 and 24 against the limit's 0.05, but 0.3 ms each once the app had a CPU to itself in its
      // weighted cgroup: no finding, once in a full run; bursts of 20 ~0.3 ms each, 0.06 s per
      // second, failed once on Node 24). Weighted as above.
      const app = spawnWeighted(process.execPath, ['--require', REGISTER, '-e', `
        const dns = require('dns');
        setInterval(() => { for (let i = 0; i < 80; i++) dns.lookup('localhost', () => {}); }, 100);
        console.log('ready');
      `], { env: cleanEnv({ UVSCOPE_EXPORTERS: exporter, UVSCOPE_INTERVAL_MS: '200', ...vars }), stdio: ['ignore', 'pipe', 'inherit'] });
      try {
        await new Promise((r) => app.stdout.once('data', r));
        await new Promise((r) => setTimeout(r, 1200));
        const r = await runNode([BIN, 'report', '--url', `http://127.0.0.1:${port}`]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, new RegExp(`^uvscope report, pid ${app.pid}`));
        assert.match(r.stdout, /threadpool: size 4, DNS slots 2/);
        assert.match(r.stdout, /\[(info|warning|critical)\] dns-no-cache: localhost is looked up \d+(\.\d)? times a second/);
        assert.match(r.stdout, /\n {2}impact: [\d.]+ ms lost per second, \d+ affected, score [\d.]+\n/);
        // Each lookup's time split in two, per hostname.
        assert.match(r.stdout, /\n {2}localhost: \d+ lookups, (\d+ ended, )?[\d.]+ ms = [\d.]+ ms waiting for a DNS slot \+ [\d.]+ ms resolving; recent \d+: p50 [\d.]+ ms, p99 [\d.]+ ms, stddev [\d.]+ ms\n/);
      } finally {
        process.kill(app.pid, 'SIGKILL');
      }
    });
  }

  it('UVSCOPE_REPORT_ON_EXIT=1 prints the report on stderr when the app exits', async () => {
    const r = await runNode(['--require', path.join(ROOT, 'register.js'), '-e', 'const end = Date.now() + 200; while (Date.now() < end);'], {
      env: { UVSCOPE_REPORT_ON_EXIT: '1', UVSCOPE_EXPORTERS: 'none' },
    });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /^uvscope report, pid \d+/m);
    assert.match(r.stderr, /threadpool: size 4/);
  });
});
