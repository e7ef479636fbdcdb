'use strict';

// The page at GET / and the static HTML report, as a person sees them in a real browser
// (Debian's chromium through playwright-core): against an app in the klarna state (a StatsD
// client resolving its host per datagram, thousands of lookups queued), a healthy app, an agent
// that stops and comes back, hundreds of hosts, and the report written by `uvscope report --html`
// and at exit. Every page is loaded with all traffic outside 127.0.0.0/8 aborted.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const dgram = require('node:dgram');
const { spawn } = require('node:child_process');
const { withDnsServer } = require('../helpers/dns-server');
const { spawnInNamespace, resolvConf } = require('../helpers/namespace');
const { REGISTER, FIXTURES, ROOT, cleanEnv, freePort, runNode, stopChild } = require('../helpers/child');
const { firstLine } = require('../../support/processes');
const { useBrowser, screenshot } = require('../helpers/browser');

const NAMESERVER = '127.0.18.1';
const STATSD_APP = path.join(ROOT, 'examples', 'incidents', 'apps', 'statsd-app.js');
const CLI = path.join(ROOT, 'bin', 'uvscope.js');

/** Resolves once the agent's endpoint answers (it starts on the app's first timer tick). */
async function endpointUp(port, timeoutMs = 10000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/snapshot.json`);
      await res.arrayBuffer();
      if (res.ok) return;
    } catch (err) {
      if (Date.now() > until) throw new Error(`the agent's endpoint on port ${port} did not come up: ${err.message}`, { cause: err });
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

const text = (page, selector) => page.locator(selector).first().innerText();
const number = async (page, selector) => Number((await text(page, selector)).replace(/[^0-9.]/g, ''));

/** What a person would check on any page: no errors, nothing fetched from outside, no sideways scrolling at 1280x800. */
async function assertClean(page, errors, blocked) {
  assert.deepEqual(errors, [], 'no console errors');
  assert.deepEqual(blocked, [], 'no request outside 127.0.0.0/8');
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 1280, `fits 1280 px wide (is ${width})`);
}

describe('the page (lib/report/page) in a real browser', function () {
  this.timeout(90000);
  const browser = useBrowser();

  describe('an app in the klarna state (hot-shots resolving per datagram, DNS answering in 50 ms)', function () {
    let statsd;
    let app;
    let port;
    // Registered first so that it runs before the DNS server's own after(): the app goes first.
    after(async () => {
      await stopChild(app);
      if (statsd) statsd.close();
    });
    const dns = withDnsServer({ address: NAMESERVER, names: { 'statsd.page.test': { a: '127.0.0.1', delayMs: 50 } } });
    before(async function () {
      statsd = dgram.createSocket('udp4');
      await new Promise((r) => statsd.bind(0, '127.0.0.1', r));
      port = await freePort();
      app = spawnInNamespace({
        resolvConf: resolvConf({ nameserver: NAMESERVER }),
        args: ['--require', REGISTER, STATSD_APP],
        env: { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '250', STATSD_HOST: 'statsd.page.test', STATSD_PORT: String(statsd.address().port), METRICS_PER_SECOND: '2000' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await firstLine(app);
      await endpointUp(port);
      // 2,000 lookups a second against 2 DNS slots answering in 50 ms (40 a second): the
      // backlog grows by about 1,960 a second.
      await new Promise((r) => setTimeout(r, 2500));
    });

    it('shows the backlog, the finding with its advice, the DNS slots held by lookups and the host', async () => {
      const { page, errors, blocked } = await browser.open();
      await page.goto(`http://127.0.0.1:${port}/`);
      await page.locator('#status', { hasText: 'live' }).waitFor();
      await page.locator('[data-finding="threadpool-dns-saturated"]').waitFor();
      const pending = await number(page, '#pending-dns b');
      assert.ok(pending > 1000, `pending lookups shown: ${pending}`);
      // Ground truth: what the agent's own endpoint says at about the same moment.
      const snap = await (await fetch(`http://127.0.0.1:${port}/snapshot.json`)).json();
      const truth = snap.points.find((p) => p.name === 'nodejs.uv.threadpool.pending' && p.attributes['nodejs.uv.threadpool.kind'] === 'dns').value;
      assert.ok(Math.abs(truth - pending) < truth * 0.5, `page ${pending} vs agent ${truth}`);
      const finding = page.locator('[data-finding="threadpool-dns-saturated"]');
      assert.match(await finding.innerText(), /UV_THREADPOOL_SIZE/);
      // Findings come first on the page.
      const order = await page.evaluate(() => [...document.querySelectorAll('main section')].map((s) => s.id));
      assert.equal(order[0], 'findings-section');
      // Both DNS slots are drawn as held by lookups, and the queue is DNS.
      assert.equal(await page.locator('#lanes .lane.k-dns').count(), 2);
      assert.equal(await page.locator('#lanes .lane').count(), 4);
      assert.match(await text(page, '#queue-label'), /waiting for a thread \(dns \d+/);
      const row = page.locator('#dns-table tr[data-host="statsd.page.test"]');
      await row.waitFor();
      const cells = await row.locator('td').allInnerTexts();
      assert.ok(Number(cells[5].replace(/,/g, '')) > 1000, `in flight ${cells[5]}`);
      assert.match(cells[7], /hot-shots/);
      await screenshot(page, 'klarna');
      await assertClean(page, errors, blocked);
    });

    it('uvscope report --html writes one static file that shows the same, with no network at all', async () => {
      const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-page-')), 'report.html');
      try {
        const r = await runNode([CLI, 'report', '--url', `http://127.0.0.1:${port}`, '--html', file]);
        assert.equal(r.code, 0, r.stderr);
        const { page, errors, blocked } = await browser.open();
        await page.route('**/*', (route) => (route.request().url().startsWith('file:') ? route.continue() : route.abort()));
        await page.goto(`file://${file}`);
        await page.locator('#status', { hasText: 'report of' }).waitFor();
        assert.ok(await page.locator('[data-finding="threadpool-dns-saturated"]').isVisible());
        assert.ok(await number(page, '#pending-dns b') > 1000);
        // The history came along: the pending chart has a line, not "collecting…".
        assert.ok(await page.locator('#chart-pending polyline').count() > 0);
        await screenshot(page, 'klarna-report');
        await assertClean(page, errors, blocked);
      } finally {
        fs.rmSync(path.dirname(file), { recursive: true, force: true });
      }
    });

    it('stays usable with hundreds of hosts: 50 rows, the rest counted, a filter that finds one', async () => {
      const many = await freePort();
      const lookups = spawnInNamespace({
        resolvConf: resolvConf({ nameserver: NAMESERVER }),
        args: ['--require', REGISTER, '-e', `
          const dns = require('dns');
          let left = 400;
          for (let i = 0; i < 400; i++) dns.lookup('name-' + i + '.many.page.test', () => { if (--left === 0) console.log('done'); });
          setInterval(() => {}, 1000);`],
        env: { UVSCOPE_PROMETHEUS_PORT: String(many), UVSCOPE_INTERVAL_MS: '250', UVSCOPE_DNS_MAX_NAMES: '1000', UV_THREADPOOL_SIZE: '64' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      try {
        dns.setName('*.many.page.test', { a: '127.0.0.1' });
        assert.equal(await firstLine(lookups), 'done');
        await endpointUp(many);
        const { page, errors, blocked } = await browser.open();
        await page.goto(`http://127.0.0.1:${many}/`);
        await page.locator('#dns-more', { hasText: 'more hosts' }).waitFor();
        assert.equal(await page.locator('#dns-table tbody tr').count(), 50);
        assert.match(await text(page, '#dns-more'), /^350 more hosts/);
        await page.fill('#host-filter', 'name-123.');
        assert.deepEqual(await page.locator('#dns-table tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.host)), ['name-123.many.page.test']);
        await screenshot(page, 'many-hosts');
        await assertClean(page, errors, blocked);
      } finally {
        await stopChild(lookups);
      }
    });
  });

  describe('a healthy app', function () {
    it('shows no finding, the host and reused connections; survives the agent stopping and restarting', async () => {
      const port = await freePort();
      const start = async () => {
        const child = spawn(process.execPath, ['--require', REGISTER, path.join(FIXTURES, 'page-healthy-app.js')], {
          env: cleanEnv({ UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '250' }),
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        await firstLine(child);
        await endpointUp(port);
        return child;
      };
      let app = await start();
      try {
        const { page, errors, blocked } = await browser.open();
        await page.goto(`http://127.0.0.1:${port}/`);
        await page.locator('#status', { hasText: 'live' }).waitFor();
        await page.locator('#conn-table tbody tr td.num').first().waitFor();
        // Nothing about DNS, the pool or connections, which this app exercises. (A 2-core machine
        // shared with other work can delay the loop now and then; that finding would be true.)
        const ids = await page.locator('#findings [data-finding]').evaluateAll((fs) => fs.map((f) => f.dataset.finding));
        assert.deepEqual(ids.filter((id) => id !== 'eventloop-blocked'), []);
        if (ids.length === 0) assert.match(await text(page, '#findings'), /No findings/);
        await page.locator('#dns-table tr[data-host="localhost"]').waitFor();
        const [, requests, fresh, reused] = await page.locator('#conn-table tbody tr').first().locator('td').allInnerTexts();
        // Ground truth: the app's keep-alive agent opens at most 2 sockets (maxSockets 2) and reuses them.
        assert.ok(Number(requests) > 0 && Number(fresh) <= 2 && Number(reused) === Number(requests) - Number(fresh), `requests ${requests}, new ${fresh}, reused ${reused}`);
        await screenshot(page, 'healthy');
        const firstPid = app.pid;

        await stopChild(app);
        await page.locator('#status', { hasText: 'agent unreachable' }).waitFor();
        assert.match(await text(page, '#banner'), /does not answer/);
        await screenshot(page, 'agent-stopped');

        app = await start();
        await page.locator('#banner', { hasText: 'restarted' }).waitFor({ timeout: 15000 });
        assert.match(await text(page, '#banner'), new RegExp(`pid ${firstPid} → ${app.pid}`));
        await page.locator('#status', { hasText: 'live' }).waitFor();
        // The connection refused while the agent was down is the only console error allowed.
        await assertClean(page, errors.filter((e) => !/Failed to load resource|ERR_CONNECTION_REFUSED/.test(e)), blocked);
      } finally {
        await stopChild(app);
      }
    });

    it('UVSCOPE_REPORT_ON_EXIT=FILE.html writes the page with the data embedded when the app exits', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-page-'));
      const file = path.join(dir, 'at-exit.html');
      try {
        const r = await runNode(['--require', REGISTER, '-e', 'setTimeout(() => {}, 700)'], {
          env: { UVSCOPE_PROMETHEUS_PORT: String(await freePort()), UVSCOPE_INTERVAL_MS: '100', UVSCOPE_REPORT_ON_EXIT: file },
        });
        assert.equal(r.code, 0, r.stderr);
        const { page, errors, blocked } = await browser.open();
        await page.goto(`file://${file}`);
        await page.locator('#status', { hasText: 'report of' }).waitFor();
        assert.match(await text(page, '#meta'), /pid \d+/);
        assert.equal(await number(page, '#pool-figures div:first-child b'), 4, 'pool size');
        assert.ok(await page.locator('#chart-loop polyline').count() > 0, 'the history of the run is drawn');
        await assertClean(page, errors, blocked);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
