'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { withDnsServer } = require('../helpers/dns-server');
const { spawnInNamespace, resolvConf } = require('../helpers/namespace');
const { REGISTER, FIXTURES, cleanEnv, freePort, stopChild } = require('../helpers/child');
const { createOtlpReceiver } = require('../helpers/otlp-receiver');
const { DNS_BUCKETS, QUEUE_WAIT_BUCKETS } = require('../../lib/snapshot/catalog');
const { otelSdkMajor } = require('../../support/peers');

const APP = path.join(FIXTURES, 'otlp-app.js');
const SDK = path.join(FIXTURES, 'otlp-sdk.js');
const NAMESERVER = '127.0.0.5';
const DELAY_MS = 150;
const PROTOCOLS = { 'http/protobuf': 'http', 'http/json': 'http', grpc: 'grpc' };

const children = new Set();

/** The child's environment: no OTEL_*, UVSCOPE_* or NODE_OPTIONS from the test's own. */
function env(extra) {
  const base = cleanEnv();
  for (const k of Object.keys(base)) if (k.startsWith('OTEL_')) delete base[k];
  return { ...base, OTEL_TRACES_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none', UVSCOPE_INTERVAL_MS: '100', ...extra };
}

/**
 * Start otlp-app.js (in a private mount namespace whose resolv.conf points at the test DNS server
 * when namespace is true). Resolves the app's JSON line; `exited` resolves at exit.
 */
function startApp({ plan = {}, preload = [REGISTER], vars = {}, namespace = true }) {
  const args = [...preload.flatMap((p) => ['--require', p]), APP];
  const childEnv = env({ FIXTURE_PLAN: JSON.stringify(plan), ...vars });
  const child = namespace
    ? spawnInNamespace({ resolvConf: resolvConf({ nameserver: NAMESERVER }), args, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.once('close', (code, signal) => {
    children.delete(child);
    resolve({ code, signal, stdout, stderr });
  }));
  const ready = new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d) => {
      stdout += d;
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line));
    });
    exited.then(({ code, signal }) => reject(new Error(`app exited (${code}, ${signal}) before it was ready\nstdout: ${stdout}\nstderr: ${stderr}`)));
  });
  ready.catch(() => {});
  return { child, ready, exited, stderr: () => stderr };
}

/** The newest data point of a metric (exported by scope) with these attributes, exactly. */
function point(rows, name, attributes = {}, scope = 'uvscope') {
  const found = rows.filter((m) => m.name === name && m.scope.name === scope)
    .flatMap((m) => m.points.map((p) => ({ ...p, metric: m })))
    .filter((p) => JSON.stringify(sorted(p.attributes)) === JSON.stringify(sorted(attributes)));
  return found[found.length - 1];
}

function sorted(o) {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
}

function lastRequestRows(receiver) {
  const withBody = receiver.requests.filter((r) => r.body);
  return require('../helpers/otlp-receiver').flatten(withBody[withBody.length - 1].body);
}

afterEach(() => Promise.all([...children].map((child) => stopChild(child))));

describe('exporters/otlp: standalone, real OTLP exporters, against the test DNS server', function () {
  withDnsServer({
    address: NAMESERVER,
    names: {
      'slow.otlp.test': { a: '127.0.0.1', delayMs: DELAY_MS },
      'fast.otlp.test': { a: '127.0.0.1' },
      'missing.otlp.test': { nxdomain: true },
      'broken.otlp.test': { servfail: true },
    },
  });

  for (const [protocol, transport] of Object.entries(PROTOCOLS)) {
    it(`${protocol}: exports the last interval on SIGTERM, with semantic-convention names, units, attributes and the lookups' true durations`, async () => {
      const receiver = await createOtlpReceiver({ transport });
      try {
        const app = startApp({
          plan: { lookups: ['slow.otlp.test', 'SLOW.otlp.test', 'missing.otlp.test', 'broken.otlp.test', 'fast.otlp.test'], settleMs: 300, then: 'wait' },
          vars: {
            UVSCOPE_EXPORTERS: 'otlp',
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
            OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: protocol,
            OTEL_EXPORTER_OTLP_HEADERS: 'x-uvscope-test=yes',
            // Longer than the test: the only export is the one on SIGTERM.
            OTEL_METRIC_EXPORT_INTERVAL: '60000',
            OTEL_SERVICE_NAME: 'otlp-standalone-test',
            OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
          },
        });
        const { results, mode, pid } = await app.ready;
        assert.equal(mode, 'standalone');
        assert.equal(receiver.requests.length, 0, 'nothing exported before the interval or SIGTERM');
        process.kill(app.child.pid, 'SIGTERM');
        const exit = await app.exited;
        assert.equal(exit.signal, 'SIGTERM', `the app still ends by the signal (code ${exit.code})\n${exit.stderr}`);
        assert.doesNotMatch(exit.stderr, /UVSCOPE_/);
        assert.equal(receiver.requests.length, 1, 'one export, on SIGTERM');
        const request = receiver.requests[0];
        assert.equal(request.headers['x-uvscope-test'], 'yes', 'OTEL_EXPORTER_OTLP_HEADERS');
        assert.equal(request.contentType, protocol === 'http/json' ? 'application/json' : protocol === 'grpc' ? 'application/grpc' : 'application/x-protobuf');
        const rows = lastRequestRows(receiver);

        const resource = rows[0].resource;
        assert.equal(resource['service.name'], 'otlp-standalone-test');
        assert.equal(resource['deployment.environment.name'], 'test');
        assert.equal(resource['telemetry.sdk.language'], 'nodejs');
        assert.equal(Number(resource['process.pid']), pid, 'the process, so that several processes of one app stay apart');
        assert.equal(resource['nodejs.cluster.worker.id'], undefined, 'not a cluster worker');
        const names = rows.map((m) => m.name);
        assert.equal(new Set(names).size, names.length, `a name exported twice: ${names}`);

        const dnsRows = rows.filter((m) => m.name === 'dns.lookup.duration');
        assert.equal(dnsRows.length, 1);
        assert.equal(dnsRows[0].kind, 'histogram');
        assert.equal(dnsRows[0].unit, 's');
        assert.equal(dnsRows[0].temporality, 2, 'cumulative');
        // Both spellings are one lower-cased name; a success carries no error.type.
        const slow = point(rows, 'dns.lookup.duration', { 'dns.question.name': 'slow.otlp.test' });
        assert.ok(slow, JSON.stringify(dnsRows[0].points.map((p) => p.attributes)));
        assert.deepEqual(slow.bounds, [...DNS_BUCKETS]);
        assert.equal(slow.count, 2);
        const appSeconds = results.filter((r) => r.name.toLowerCase() === 'slow.otlp.test').map((r) => r.seconds);
        assert.ok(slow.min >= DELAY_MS / 1000 - 0.002, `min ${slow.min} below the server's delay`);
        assert.ok(slow.max <= Math.max(...appSeconds) + 0.001, `max ${slow.max} above what the app measured (${appSeconds})`);
        assert.ok(slow.sum <= appSeconds[0] + appSeconds[1] + 0.002, `sum ${slow.sum}`);
        // Bucketed by their true duration: never below the server's delay (the DNS server runs in
        // this test process, so a busy moment here can only make an answer later, not earlier).
        assert.equal(slow.counts.slice(0, DNS_BUCKETS.indexOf(0.1) + 1).reduce((a, c) => a + c, 0), 0, 'none at or below 0.1 s');
        assert.equal(slow.counts.reduce((a, c) => a + c, 0), 2);
        assert.equal(point(rows, 'dns.lookup.duration', { 'dns.question.name': 'fast.otlp.test' }).count, 1);
        assert.deepEqual(results.map((r) => r.code), [null, null, 'ENOTFOUND', 'EAI_AGAIN', null]);
        assert.equal(point(rows, 'dns.lookup.duration', { 'dns.question.name': 'missing.otlp.test', 'error.type': 'ENOTFOUND' }).count, 1);
        assert.equal(point(rows, 'dns.lookup.duration', { 'dns.question.name': 'broken.otlp.test', 'error.type': 'EAI_AGAIN' }).count, 1);
        assert.equal(point(rows, 'dns.lookup.duration', { 'dns.question.name': 'missing.otlp.test' }), undefined);
        assert.equal(dnsRows[0].points.length, 4, 'the agent\'s own probe lookups (localhost) are not the app\'s');
        // Each lookup's wait for a DNS slot, by the same names, one observation per lookup.
        const waitRows = rows.filter((m) => m.name === 'nodejs.dns.lookup.queue_wait');
        assert.equal(waitRows.length, 1);
        assert.equal(waitRows[0].kind, 'histogram');
        assert.equal(waitRows[0].unit, 's');
        const slowWait = point(rows, 'nodejs.dns.lookup.queue_wait', { 'dns.question.name': 'slow.otlp.test' });
        assert.equal(slowWait.count, 2);
        assert.ok(slowWait.sum <= slow.sum, `wait ${slowWait.sum} s within the lookups' ${slow.sum} s`);
        assert.equal(waitRows[0].points.length, 4, 'hostnames as in dns.lookup.duration, the probe\'s localhost not among them');

        const queued = point(rows, 'nodejs.uv.threadpool.queued', { 'nodejs.uv.threadpool.kind': 'dns' });
        assert.equal(queued.metric.kind, 'gauge');
        assert.equal(queued.metric.unit, '{request}');
        assert.equal(queued.value, 0);
        assert.equal(point(rows, 'nodejs.uv.threadpool.size').value, 4);
        assert.equal(point(rows, 'nodejs.uv.threadpool.dns_slots').value, 2);
        const elu = point(rows, 'nodejs.eventloop.utilization');
        assert.equal(elu.metric.unit, '1');
        assert.ok(elu.value >= 0 && elu.value <= 1, String(elu.value));
        const p99 = point(rows, 'nodejs.eventloop.delay.p99');
        assert.equal(p99.metric.unit, 's');
        assert.ok(p99.value >= 0 && p99.value < 1, String(p99.value));
        assert.ok(!names.includes('nodejs.eventloop.delay'), 'the pre-bucketed loop-delay histogram is Prometheus-only');

        // Each probe is one observation: its count is the number of probes that finished. Probes
        // run while the pool has work (the app's slow lookups were pending at several samples).
        for (const queue of ['dns', 'work']) {
          const wait = point(rows, 'nodejs.uv.threadpool.queue_wait', { 'nodejs.uv.threadpool.queue': queue });
          assert.equal(wait.metric.kind, 'histogram');
          assert.deepEqual(wait.bounds, [...QUEUE_WAIT_BUCKETS]);
          assert.ok(wait.count >= 1, `${queue}: ${wait.count} probes`);
          assert.ok(wait.max < 0.5 && wait.min > 0, `${queue}: ${wait.min}..${wait.max} s with an idle pool`);
        }
        assert.equal(point(rows, 'nodejs.uv.requests.active', { 'nodejs.uv.request.type': 'GetAddrInfoReqWrap' }).metric.unit, '{request}');
      } finally {
        await receiver.close();
      }
    });
  }
});

describe(`exporters/otlp: companion, inside the app's own NodeSDK (SDK ${otelSdkMajor()} line)`, function () {
  withDnsServer({
    address: NAMESERVER,
    names: { 'slow.otlp.test': { a: '127.0.0.1', delayMs: DELAY_MS }, 'missing.otlp.test': { nxdomain: true } },
  });

  /** Run the app with its SDK sending to one receiver and uvscope's standalone endpoint to another. */
  async function companion({ preload, plan, vars = {} }) {
    const appReceiver = await createOtlpReceiver();
    const ownReceiver = await createOtlpReceiver();
    try {
      const app = startApp({
        preload,
        plan: { then: 'wait', ...plan },
        vars: { UVSCOPE_EXPORTERS: 'otlp', APP_OTLP_ENDPOINT: appReceiver.endpoint, OTEL_EXPORTER_OTLP_ENDPOINT: ownReceiver.endpoint, OTEL_METRIC_EXPORT_INTERVAL: '200', ...vars },
      });
      const ready = await app.ready;
      // Wait for an app export made after the lookups (the app's reader runs every 200 ms).
      const before = appReceiver.requests.length;
      await appReceiver.waitFor((r) => r.requests.length >= before + 2, 5000);
      process.kill(app.child.pid, 'SIGTERM');
      const exit = await app.exited;
      return { ready, exit, appRows: lastRequestRows(appReceiver), appReceiver, ownReceiver };
    } finally {
      await appReceiver.close();
      await ownReceiver.close();
    }
  }

  function assertCompanion({ ready, exit, appRows }) {
    assert.equal(ready.mode, 'companion');
    assert.equal(exit.code, 0, exit.stderr);
    assert.doesNotMatch(exit.stderr, /UVSCOPE_/);
    assert.equal(appRows[0].resource['service.name'], 'app-sdk', 'the app\'s resource');
    const slow = point(appRows, 'dns.lookup.duration', { 'dns.question.name': 'slow.otlp.test' });
    assert.ok(slow, 'the lookup histogram leaves through the app\'s exporter');
    assert.equal(slow.count, 1);
    // A lookup is timed to its callback, which waits for the app's loop (busy here starting the
    // app's SDK): 52 ms late on Node 26, 150 ms on Node 24 with the machine loaded. The app's own
    // timing of the lookup bounds it from above.
    const appSeconds = ready.results.find((r) => r.name === 'slow.otlp.test').seconds;
    assert.ok(slow.min >= DELAY_MS / 1000 - 0.002 && slow.max <= appSeconds + 0.001, `${slow.min}..${slow.max} s, the app timed ${appSeconds} s`);
    assert.equal(point(appRows, 'dns.lookup.duration', { 'dns.question.name': 'missing.otlp.test', 'error.type': 'ENOTFOUND' }).count, 1);
    assert.equal(point(appRows, 'nodejs.uv.threadpool.size').value, 4);
    assert.equal(point(appRows, 'nodejs.uv.threadpool.queued', { 'nodejs.uv.threadpool.kind': 'fs' }).value, 0);
    assert.ok(point(appRows, 'nodejs.eventloop.delay.max'));
    const names = appRows.map((m) => m.name);
    assert.equal(new Set(names).size, names.length, `a name exported twice: ${names}`);
  }

  it('SDK preloaded before uvscope: uvscope\'s metrics leave through the app\'s reader, with the app\'s resource', async () => {
    const r = await companion({ preload: [SDK, REGISTER], plan: { lookups: ['slow.otlp.test', 'missing.otlp.test'] }, vars: { APP_SDK: 'preload' } });
    assertCompanion(r);
    assert.equal(r.ownReceiver.requests.length, 0, 'uvscope built no provider of its own');
  });

  it('SDK started by the app after uvscope\'s preload: the same', async () => {
    const r = await companion({ preload: [REGISTER], plan: { sdk: 'main', lookups: ['slow.otlp.test', 'missing.otlp.test'] } });
    assertCompanion(r);
    assert.equal(r.ownReceiver.requests.length, 0, 'uvscope built no provider of its own');
  });

  it('UVSCOPE_OTLP_MODE=companion and an SDK that starts 600 ms later: lookups made before it are recorded once it does', async () => {
    const r = await companion({
      preload: [REGISTER],
      plan: { sdk: 'late', lateMs: 600, lookups: ['slow.otlp.test', 'missing.otlp.test'], settleMs: 700 },
      vars: { UVSCOPE_OTLP_MODE: 'companion' },
    });
    assertCompanion(r);
    assert.equal(r.ownReceiver.requests.length, 0);
  });

  it('mode auto and an SDK that starts late: uvscope\'s own provider flushes and hands over to the app\'s', async () => {
    const r = await companion({ preload: [REGISTER], plan: { sdk: 'late', lateMs: 600, settleMs: 700 } });
    assert.equal(r.ready.mode, 'companion');
    assert.equal(r.exit.code, 0, r.exit.stderr);
    assert.equal(r.appRows[0].resource['service.name'], 'app-sdk');
    assert.equal(point(r.appRows, 'nodejs.uv.threadpool.size').value, 4);
    // The standalone provider (first sample, no SDK yet) exported its last interval at the switch.
    assert.equal(r.ownReceiver.requests.length >= 1, true, 'the standalone provider flushed');
    const own = r.ownReceiver.metrics();
    assert.ok(own.some((m) => m.name === 'nodejs.uv.threadpool.size' && m.resource['service.name'] !== 'app-sdk'));
  });

  it('next to @opentelemetry/instrumentation-runtime-node: its event-loop metrics stay, uvscope leaves its own out, no name twice', async () => {
    const r = await companion({ preload: [SDK, REGISTER], plan: { lookups: ['slow.otlp.test', 'missing.otlp.test'] }, vars: { APP_SDK: 'preload', APP_RUNTIME_NODE: '1' } });
    const byName = new Map();
    for (const m of r.appRows) byName.set(m.name, [...(byName.get(m.name) || []), m.scope.name]);
    const runtime = r.appRows.filter((m) => m.scope.name === '@opentelemetry/instrumentation-runtime-node').map((m) => m.name);
    assert.ok(runtime.includes('nodejs.eventloop.utilization'), `runtime-node exports: ${runtime}`);
    assert.ok(runtime.includes('nodejs.eventloop.delay.p99'));
    for (const [name, scopes] of byName) assert.equal(scopes.length, 1, `${name} exported by ${scopes}`);
    assert.ok(point(r.appRows, 'nodejs.uv.threadpool.size'), 'uvscope\'s own metrics are still there');
    assert.equal(point(r.appRows, 'nodejs.eventloop.utilization'), undefined, 'not from uvscope');
  });
});

// uvscope resolves the SDK packages from where it is installed: a copy of it whose node_modules is
// the peers/ workspace's makes standalone mode load the SDK 3 line (Node 22.15+).
describe('exporters/otlp: standalone with the SDK 3 line', function () {
  let dir;
  before(function () {
    if (otelSdkMajor() < 3) this.skip(); // Node below 22.15: the SDK 2 line, tested above
    const fs = require('fs');
    const os = require('os');
    const { ROOT } = require('../helpers/child');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-sdk3-'));
    const target = path.join(dir, 'node_modules', 'uvscope');
    fs.mkdirSync(target, { recursive: true });
    for (const entry of ['package.json', 'register.js', 'lib', 'exporters']) fs.cpSync(path.join(ROOT, entry), path.join(target, entry), { recursive: true });
    fs.symlinkSync(path.join(ROOT, 'peers', 'node_modules'), path.join(target, 'node_modules'));
  });
  after(() => {
    if (dir) require('fs').rmSync(dir, { recursive: true, force: true });
  });

  it('exports over http/protobuf with sdk-metrics 3 and the 0.30x exporter, the last interval on SIGTERM', async () => {
    const receiver = await createOtlpReceiver({ transport: 'http' });
    try {
      const register = path.join(dir, 'node_modules', 'uvscope', 'register.js');
      const app = startApp({
        preload: [register],
        namespace: false,
        plan: { lookups: ['localhost', 'localhost'], then: 'wait' },
        vars: { UVSCOPE_EXPORTERS: 'otlp', UVSCOPE_OTLP_MODE: 'standalone', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf', OTEL_METRIC_EXPORT_INTERVAL: '60000', OTEL_SERVICE_NAME: 'sdk3' },
      });
      const { mode } = await app.ready;
      assert.equal(mode, 'standalone');
      process.kill(app.child.pid, 'SIGTERM');
      const exit = await app.exited;
      assert.doesNotMatch(exit.stderr, /UVSCOPE_/);
      assert.equal(receiver.requests.length, 1, 'one export, on SIGTERM');
      const rows = lastRequestRows(receiver);
      assert.equal(rows[0].resource['service.name'], 'sdk3');
      assert.match(String(rows[0].resource['telemetry.sdk.version']), /^3\./, 'the SDK 3 line made the export');
      assert.equal(point(rows, 'dns.lookup.duration', { 'dns.question.name': 'localhost' }).count, 2);
    } finally {
      await receiver.close();
    }
  });
});

describe('exporters/otlp: a collector that is down or stuck', function () {
  async function hammer(port, n) {
    const started = Date.now();
    for (let i = 0; i < n; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/`);
      assert.equal(await res.text(), 'ok');
    }
    return Date.now() - started;
  }

  for (const kind of ['down', 'stuck']) {
    it(`${kind}: the app keeps serving, exports stay bounded, one warning rather than one per export, SIGTERM still ends it`, async () => {
      const receiver = kind === 'stuck' ? await createOtlpReceiver({ hang: true }) : null;
      const endpoint = receiver ? receiver.endpoint : `http://127.0.0.1:${await freePort()}`;
      try {
        const app = startApp({
          namespace: false,
          plan: { then: 'wait' },
          vars: { UVSCOPE_EXPORTERS: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_METRIC_EXPORT_INTERVAL: '50', OTEL_METRIC_EXPORT_TIMEOUT: '50', OTEL_EXPORTER_OTLP_TIMEOUT: '200' },
        });
        const { port } = await app.ready;
        await new Promise((r) => setTimeout(r, 1500)); // ~30 export intervals
        const ms = await hammer(port, 50);
        assert.ok(ms < 3000, `50 requests took ${ms} ms`);
        process.kill(app.child.pid, 'SIGTERM');
        const exit = await app.exited;
        assert.equal(exit.signal, 'SIGTERM');
        const warnings = exit.stderr.match(/UVSCOPE_OTLP_EXPORT_FAILED/g) || [];
        assert.equal(warnings.length, 1, exit.stderr);
        if (receiver) {
          assert.ok(receiver.requests.length >= 3, `${receiver.requests.length} exports tried`);
          // The exporter's concurrency limit and timeouts bound what is in flight (and so memory).
          assert.ok(receiver.maxOpen <= 30, `${receiver.maxOpen} exports in flight at once`);
        }
      } finally {
        if (receiver) await receiver.close();
      }
    });
  }
});

describe('exporters/otlp: zero cost when off, and never keeps the app alive', function () {
  // prom-client itself loads @opentelemetry/api (for exemplars), so the check is for the SDK.
  it('without otlp in UVSCOPE_EXPORTERS no OpenTelemetry SDK package is loaded; standalone loads it', async () => {
    const code = 'setTimeout(() => console.log(Object.keys(require.cache).filter((f) => /@opentelemetry[\\/](sdk-|resources|exporter-)/.test(f)).length), 300)';
    const count = async (vars) => {
      const child = spawn(process.execPath, ['--require', REGISTER, '-e', code], { env: env({ UVSCOPE_PROMETHEUS_PORT: '0', ...vars }), stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      await new Promise((r) => child.once('close', r));
      children.delete(child);
      return Number(out.trim());
    };
    assert.equal(await count({}), 0);
    assert.equal(await count({ UVSCOPE_EXPORTERS: 'none' }), 0);
    assert.ok(await count({ UVSCOPE_EXPORTERS: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}` }) > 0);
  });

  it('standalone: an app that ends on its own still ends, and stop() exports the last interval', async () => {
    const receiver = await createOtlpReceiver();
    try {
      const app = startApp({ namespace: false, plan: { then: 'stop', settleMs: 300 }, vars: { UVSCOPE_EXPORTERS: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_METRIC_EXPORT_INTERVAL: '60000' } });
      await app.ready;
      const exit = await Promise.race([app.exited, new Promise((r) => setTimeout(() => r('timeout'), 10000))]);
      assert.notEqual(exit, 'timeout', 'the app ended on its own');
      assert.equal(exit.code, 0, exit.stderr);
      assert.equal(receiver.requests.length, 1);
      assert.ok(point(receiver.metrics(), 'nodejs.uv.threadpool.size'));
    } finally {
      await receiver.close();
    }
  });
});

describe('exporters/otlp: the exporter\'s own traffic', function () {
  after(() => Promise.all([...children].map((child) => stopChild(child))));

  for (const protocol of ['http/protobuf', 'http/json']) {
    it(`${protocol}: exports to a hostname every 200 ms, and none of its requests, connections or lookups count as the app's`, async () => {
      const receiver = await createOtlpReceiver({ transport: 'http' });
      try {
        const app = startApp({
          namespace: false,
          plan: { then: 'wait' },
          vars: {
            UVSCOPE_EXPORTERS: 'otlp',
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint.replace('127.0.0.1', 'localhost'),
            OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: protocol,
            OTEL_METRIC_EXPORT_INTERVAL: '200',
          },
        });
        await app.ready;
        await new Promise((r) => setTimeout(r, 1500));
        process.kill(app.child.pid, 'SIGTERM');
        await app.exited;
        assert.ok(receiver.requests.length >= 4, `${receiver.requests.length} exports`);
        const rows = lastRequestRows(receiver);
        assert.ok(point(rows, 'nodejs.uv.threadpool.size'), 'the export itself is real');
        assert.deepEqual(rows.filter((m) => ['nodejs.http.client.requests', 'nodejs.net.connect.duration'].includes(m.name)).map((m) => m.points), []);
        assert.equal(point(rows, 'dns.lookup.duration', { 'dns.question.name': 'localhost' }), undefined, 'its lookups of localhost are not the app\'s');
      } finally {
        await receiver.close();
      }
    });
  }
});
