'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { decode } = require('@msgpack/msgpack');
const { createDogStatsdReceiver, udsSupport } = require('../helpers/dogstatsd-receiver');
const { withDnsServer } = require('../helpers/dns-server');
const { runInNamespace, resolvConf } = require('../helpers/namespace');
const { REGISTER, FIXTURES, runNode, lastJson, freePort } = require('../helpers/child');

const APP = path.join(FIXTURES, 'datadog-app.js');
// dd-trace 6 on Node 22+, 5 on Node 20 (support/peers.js).
const { ddTraceInit: DD_INIT, ddTraceMajor } = require('../../support/peers');
const UNIFIED = ['service:checkout', 'env:test', 'version:1.2.3', 'team:dns'];

function datadogEnv(extra) {
  return {
    UVSCOPE_EXPORTERS: 'datadog',
    UVSCOPE_INTERVAL_MS: '100',
    UVSCOPE_DATADOG_FLUSH_INTERVAL_MS: '1000',
    DD_SERVICE: 'checkout',
    DD_ENV: 'test',
    DD_VERSION: '1.2.3',
    DD_TAGS: 'team:dns',
    ...extra,
  };
}

async function runApp(plan, env, { preload = true } = {}) {
  const r = await runNode(preload ? ['--require', REGISTER, APP] : [APP], { env: { FIXTURE_PLAN: JSON.stringify(plan), ...env }, timeoutMs: 20000 });
  assert.equal(r.code, 0, r.stderr);
  return { ...r, out: lastJson(r.stdout) };
}

describe('exporters/datadog: DogStatsD to a receiver the test runs', function () {
  let receiver;
  beforeEach(async () => {
    receiver = await createDogStatsdReceiver();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('sends dotted catalog names with unified service tags and per-metric tags, many to a datagram of at most 1400 bytes, gauges once per flush interval', async () => {
    const { out } = await runApp({ rounds: 20, perRound: 10, everyMs: 50, holdMs: 1500 },
      datadogEnv({ DD_DOGSTATSD_URL: `udp://127.0.0.1:${receiver.port}` }));
    assert.deepEqual(receiver.rejected, []);
    assert.ok(receiver.metrics.length > 100, `${receiver.metrics.length} metrics`);
    for (const m of receiver.metrics) for (const t of UNIFIED) assert.ok(m.tags.includes(t), `${m.name} lacks ${t}: ${m.tags}`);
    // The process, so that several processes of one app never overwrite each other's gauges.
    for (const m of receiver.metrics) assert.deepEqual(m.tags.filter((t) => /^(pid|worker_id):/.test(t)), [`pid:${out.pid}`], `${m.name}: ${m.tags}`);

    const active = receiver.find('nodejs.uv.requests.active', ['type:GetAddrInfoReqWrap']);
    assert.ok(active.length > 0 && active.every((m) => m.type === 'g'));
    assert.deepEqual([...new Set(receiver.find('nodejs.uv.threadpool.size').map((m) => m.value))], [4]);
    assert.deepEqual([...new Set(receiver.find('nodejs.uv.threadpool.dns_slots').map((m) => m.value))], [2]);
    assert.ok(receiver.find('nodejs.uv.threadpool.queued', ['kind:dns']).length > 0);
    assert.ok(receiver.find('nodejs.uv.threadpool.queue_wait.count', ['queue:dns']).every((m) => m.type === 'c'));
    assert.ok(receiver.find('nodejs.eventloop.delay.p99').length > 0, 'event-loop gauges are sent when dd-trace runtime metrics are off');
    assert.ok(receiver.find('v8js.memory.heap.limit').length > 0, 'and the heap limit');
    assert.equal(receiver.find('dns.lookup.duration.count').length, 0, 'lookup durations go per lookup, not as a histogram');

    // One distribution value per lookup, unsampled below the rate limit.
    const durations = receiver.find('dns.lookup.duration', ['dns_question_name:localhost']);
    assert.equal(durations.length, out.lookups);
    assert.ok(durations.every((m) => m.type === 'd' && m.rate === 1 && m.value > 0 && m.value < 1));
    // Their wait for a DNS slot: one distribution value per lookup too, within its duration.
    const waits = receiver.find('nodejs.dns.lookup.queue_wait', ['dns_question_name:localhost']);
    assert.equal(waits.length, out.lookups);
    assert.ok(waits.every((m) => m.type === 'd' && m.value >= 0 && m.value < 1));
    assert.equal(receiver.find('nodejs.dns.lookup.queue_wait.count').length, 0);

    assert.ok(Math.max(...receiver.datagrams) <= 1400, `largest datagram ${Math.max(...receiver.datagrams)} bytes`);
    assert.ok(receiver.metrics.length / receiver.datagrams.length >= 5, `${receiver.metrics.length} metrics in ${receiver.datagrams.length} datagrams`);
    // The app ran about 3 s with a 100 ms sampling interval: ~30 samples, but gauges only every 1 s.
    const flushes = receiver.find('nodejs.uv.threadpool.size').length;
    assert.ok(flushes >= 2 && flushes <= 5, `${flushes} flushes of gauges`);
  });

  it('at a high lookup rate sends distributions with a sample rate that still adds up to the lookups made', async () => {
    const { out } = await runApp({ rounds: 20, perRound: 100, holdMs: 300 },
      datadogEnv({ DD_DOGSTATSD_URL: `udp://127.0.0.1:${receiver.port}`, UVSCOPE_DATADOG_MAX_LOOKUPS_PER_SECOND: '50' }));
    assert.deepEqual(receiver.rejected, []);
    const durations = receiver.find('dns.lookup.duration');
    assert.equal(out.lookups, 2000);
    assert.ok(durations.length < out.lookups / 2, `${durations.length} of ${out.lookups} sent`);
    assert.ok(durations.some((m) => m.rate < 1));
    const estimated = durations.reduce((sum, m) => sum + 1 / m.rate, 0);
    assert.ok(Math.abs(estimated - out.lookups) / out.lookups < 0.3, `sum of 1/rate ${estimated} vs ${out.lookups} lookups`);
  });

  it('an unreachable agent costs nothing: the app exits on its own, without warnings', async () => {
    const port = await freePort(); // nobody listens there
    const r = await runApp({ rounds: 10, perRound: 10, holdMs: 1200 }, datadogEnv({ DD_DOGSTATSD_URL: `udp://127.0.0.1:${port}` }));
    assert.doesNotMatch(r.stderr, /UVSCOPE_|Error/);
    assert.ok(r.ms < 10000, `${r.ms} ms`);
  });

  it('an absent Unix socket costs nothing; without unix-dgram built for this Node it warns once and sends nothing', async () => {
    const r = await runApp({ rounds: 5, perRound: 10, holdMs: 1200 }, datadogEnv({ DD_DOGSTATSD_URL: 'unix:///nonexistent/uvscope-dsd.socket' }));
    const warnings = r.stderr.match(/UVSCOPE_DATADOG_UDS_UNAVAILABLE/g) || [];
    assert.equal(warnings.length, udsSupport().ok ? 0 : 1, r.stderr);
    assert.doesNotMatch(r.stderr.replace(/.*UVSCOPE_DATADOG_UDS_UNAVAILABLE.*\n?/g, ''), /UVSCOPE_|Error/);
  });

  it('delivers over a Unix datagram socket, up to 8 KiB a datagram, and the app still exits on its own', async function () {
    const support = udsSupport();
    // unix-dgram is a native addon behind an npm install script (see docs/datadog.md).
    if (!support.ok) this.skip();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-dsd-'));
    const file = path.join(dir, 'dsd.socket');
    const uds = await createDogStatsdReceiver({ path: file });
    try {
      const { out } = await runApp({ rounds: 20, perRound: 20, everyMs: 20, holdMs: 1300 },
        datadogEnv({ DD_DOGSTATSD_URL: `unix://${file}`, UVSCOPE_DATADOG_MAX_LOOKUPS_PER_SECOND: '100000' }));
      assert.deepEqual(uds.rejected, []);
      assert.equal(uds.find('dns.lookup.duration').length, out.lookups);
      assert.ok(uds.find('nodejs.uv.threadpool.dns_slots', UNIFIED).length > 0);
      assert.ok(Math.max(...uds.datagrams) <= 8192 && Math.max(...uds.datagrams) > 1400, `datagrams up to ${Math.max(...uds.datagrams)} bytes`);
    } finally {
      await uds.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('uses the app\'s own hot-shots client given to start({ datadog: { client } })', async () => {
    const { out } = await runApp({ ownClient: { port: receiver.port, globalTags: ['app:own'] }, rounds: 5, perRound: 4, holdMs: 1300 }, {}, { preload: false });
    assert.deepEqual(receiver.rejected, []);
    assert.equal(receiver.find('dns.lookup.duration', ['app:own', 'dns_question_name:localhost']).length, out.lookups);
    assert.ok(receiver.find('nodejs.uv.threadpool.size', ['app:own']).length > 0);
  });
});

describe('exporters/datadog: the Agent host is looked up in the background, never per datagram', function () {
  const server = withDnsServer({ address: '127.0.0.4' });
  let second;
  afterEach(async () => {
    if (second) await second.close();
    second = null;
  });

  it('thousands of metrics, a handful of lookups; the last good address is kept when the DNS fails, a new one is used when it changes', async function () {
    const first = await createDogStatsdReceiver();
    try {
      second = await createDogStatsdReceiver({ host: '127.0.0.5', port: first.port });
      server.reset();
      server.setName('dogstatsd.test', { a: '127.0.0.1' });
      const run = runInNamespace({
        resolvConf: resolvConf({ nameserver: '127.0.0.4', timeout: 1, attempts: 1 }),
        args: ['--require', REGISTER, APP],
        env: {
          ...datadogEnv({ DD_AGENT_HOST: 'dogstatsd.test', DD_DOGSTATSD_PORT: String(first.port) }),
          UVSCOPE_INTERVAL_MS: '50',
          UVSCOPE_DATADOG_DNS_REFRESH_MS: '1000',
          UVSCOPE_DATADOG_MAX_LOOKUPS_PER_SECOND: '100000',
          FIXTURE_PLAN: JSON.stringify({ rounds: 90, perRound: 40, everyMs: 50, holdMs: 500 }),
        },
        timeoutMs: 30000,
      });
      await first.waitFor(() => first.metrics.length > 0, 10000);
      server.setName('dogstatsd.test', { servfail: true });
      const atFailure = first.metrics.length;
      await new Promise((r) => setTimeout(r, 1500));
      assert.ok(first.metrics.length > atFailure + 100, 'metrics still reach the last good address while lookups fail');
      server.setName('dogstatsd.test', { a: '127.0.0.5' });
      await second.waitFor(() => second.metrics.length > 0, 5000);
      const r = await run;
      assert.equal(r.code, 0, r.stderr);
      assert.ok((r.stderr.match(/UVSCOPE_DATADOG_AGENT_UNRESOLVED/g) || []).length <= 1, r.stderr);

      const metrics = first.metrics.length + second.metrics.length;
      const queries = server.count('dogstatsd.test');
      assert.deepEqual([...first.rejected, ...second.rejected], []);
      assert.ok(metrics >= 3000, `${metrics} metrics`);
      // One getaddrinfo (an A and an AAAA query) per refresh second over a ~6 s run.
      assert.ok(queries >= 2 && queries <= 16, `${queries} queries for ${metrics} metrics`);
    } finally {
      await first.close();
    }
  });
});

/** A stand-in for the Datadog trace agent: decodes msgpack trace payloads, answers everything. */
async function createTraceAgent() {
  const spans = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (/^\/v0\.[45]\/traces/.test(req.url)) {
        for (const trace of decode(Buffer.concat(chunks))) spans.push(...trace);
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    spans,
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(resolve);
    }),
  };
}

describe(`exporters/datadog: companion to dd-trace ${ddTraceMajor()} (the real package)`, function () {
  withDnsServer({ address: '127.0.0.4', names: { '*.slow.test': { a: '127.0.0.1', delayMs: 300 } } });

  for (const order of [['dd-trace', 'uvscope'], ['uvscope', 'dd-trace']]) {
    it(`--require ${order.join(' --require ')}: dd-trace's dns.lookup spans carry the backlog they waited behind, and uvscope still times every lookup`, async () => {
      const agent = await createTraceAgent();
      const receiver = await createDogStatsdReceiver();
      try {
        const names = Array.from({ length: 6 }, (_, i) => `n${i}.slow.test`);
        const requires = order.flatMap((m) => ['--require', m === 'uvscope' ? REGISTER : DD_INIT]);
        const r = await runInNamespace({
          resolvConf: resolvConf({ nameserver: '127.0.0.4' }),
          args: [...requires, APP],
          env: {
            ...datadogEnv({ DD_DOGSTATSD_URL: `udp://127.0.0.1:${receiver.port}` }),
            DD_TRACE_AGENT_URL: agent.url,
            DD_TRACE_FLUSH_INTERVAL: '100',
            DD_TRACE_STARTUP_LOGS: 'false',
            DD_INSTRUMENTATION_TELEMETRY_ENABLED: 'false',
            DD_REMOTE_CONFIGURATION_ENABLED: 'false',
            DD_RUNTIME_METRICS_ENABLED: 'true',
            DD_PROFILING_ENABLED: 'false',
            FIXTURE_PLAN: JSON.stringify({ concurrent: names, holdMs: 1300 }),
          },
          timeoutMs: 30000,
        });
        assert.equal(r.code, 0, r.stderr);
        const spans = agent.spans.filter((s) => s.name === 'dns.lookup' && names.includes(s.resource));
        assert.equal(spans.length, 6, `dns.lookup spans: ${JSON.stringify(agent.spans.map((s) => s.name))}`);
        // 6 lookups at once, 2 DNS slots (pool of 4): 0, 1, 2 lookups ahead run or wait for a slot.
        assert.deepEqual(spans.map((s) => s.metrics['uvscope.dns.queued_ahead']).sort(), [0, 0, 0, 1, 2, 3]);
        assert.deepEqual(spans.map((s) => s.metrics['uvscope.dns.in_flight']).sort(), [0, 1, 2, 3, 4, 5]);
        for (const s of spans) {
          assert.equal(s.metrics['uvscope.threadpool.dns_slots'], 2);
          assert.equal(s.metrics['uvscope.threadpool.size'], 4);
          assert.match(s.meta['uvscope.dns.caller'], /test\/fixtures\/datadog-app\.js:\d+/);
        }
        // The last lookup waited behind the backlog: its span is at least one answer delay longer.
        const last = spans.find((s) => s.metrics['uvscope.dns.queued_ahead'] === 3);
        assert.ok(Number(last.duration) / 1e9 >= 0.55, `queued lookup took ${Number(last.duration) / 1e9} s`);

        await receiver.waitFor(() => receiver.find('dns.lookup.duration').length >= 6, 3000);
        assert.deepEqual(receiver.find('dns.lookup.duration').map((m) => m.tags.find((t) => t.startsWith('dns_question_name:'))).sort(),
          names.map((n) => `dns_question_name:${n}`));
        assert.equal(receiver.find('nodejs.eventloop.delay.p99').length, 0, 'dd-trace runtime metrics already send event-loop delay');
        assert.equal(receiver.find('v8js.memory.heap.limit').length, 0, 'nor the heap');
        assert.equal(receiver.find('v8js.gc.duration.count').length, 0, 'nor GC pauses');
        assert.deepEqual(receiver.rejected.filter((x) => !x.line.startsWith('runtime.')), []);
      } finally {
        await receiver.close();
        await agent.close();
      }
    });
  }
});
