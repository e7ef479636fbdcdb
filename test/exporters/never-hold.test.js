'use strict';

// The exporters never hold the process: an app whose work has ended exits promptly with
// every exporter, whatever the collector does, and the last interval still leaves when the
// collector is up. The app prints when its work ended; the test times the exit from there.

const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { createDnsServer } = require('../helpers/dns-server');
const { requireNamespace, spawnInNamespace, resolvConf } = require('../helpers/namespace');
const { REGISTER, FIXTURES, cleanEnv, freePort } = require('../helpers/child');
const { createOtlpReceiver } = require('../helpers/otlp-receiver');
const { createDogStatsdReceiver } = require('../helpers/dogstatsd-receiver');

const APP = path.join(FIXTURES, 'ending-app.js');
const NAMESERVER = '127.0.15.1';
const NX_HOST = 'collector.nx.h11.test';
const LOOKUPS = 25;
// Today's exporters held such apps 10+ s (or forever); the bound is ~1 s. An order of magnitude.
const EXIT_WITHIN_MS = 3000;
const PORTS = { 'http/protobuf': 4318, 'http/json': 4318, grpc: 4317 };
const TRANSPORT = { 'http/protobuf': 'http', 'http/json': 'http', grpc: 'grpc' };

const children = new Set();
afterEach(() => {
  for (const child of children) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

/** Run the app to its exit (killed after 30 s). Resolves its output, and ms from work end to exit. */
function runApp(vars, { namespace = false } = {}) {
  const env = cleanEnv();
  for (const k of Object.keys(env)) if (k.startsWith('OTEL_') || k.startsWith('DD_')) delete env[k];
  Object.assign(env, { UVSCOPE_PROMETHEUS_PORT: '0', UVSCOPE_INTERVAL_MS: '100', FIXTURE_LOOKUPS: String(LOOKUPS), OTEL_TRACES_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none', ...vars });
  const args = ['--require', REGISTER, APP];
  const child = namespace
    ? spawnInNamespace({ resolvConf: resolvConf({ nameserver: NAMESERVER }), args, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      process.kill(child.pid, 'SIGKILL');
      reject(new Error(`the app did not exit within 30 s\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, 30000);
    child.once('close', (code, signal) => {
      const exitAt = Date.now();
      clearTimeout(timer);
      children.delete(child);
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (!line) return reject(new Error(`no output (${code}, ${signal})\nstderr: ${stderr}`));
      const out = JSON.parse(line);
      resolve({ code, signal, stderr, out, lingerMs: exitAt - out.doneAt });
    });
  });
}

function lookupCount(receiver) {
  const points = receiver.metrics()
    .filter((m) => m.name === 'dns.lookup.duration' && m.scope.name === 'uvscope')
    .flatMap((m) => m.points)
    .filter((p) => p.attributes['dns.question.name'] === 'localhost');
  return points.length ? points[points.length - 1].count : 0;
}

describe('exporters never hold the process: OTLP (standalone)', function () {
  this.timeout(60000);
  let dnsServer;
  before(async function () {
    requireNamespace(this);
    // Knows no name: every query is answered NXDOMAIN.
    dnsServer = await createDnsServer({ address: NAMESERVER, port: 53 });
  });
  after(async () => {
    if (dnsServer) await dnsServer.close();
  });

  for (const protocol of Object.keys(PORTS)) {
    const otlp = (endpoint, extra) => ({
      UVSCOPE_EXPORTERS: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      // A short interval: an export is in flight nearly all the time (the case that never ended).
      OTEL_METRIC_EXPORT_INTERVAL: '100',
      ...extra,
    });

    it(`${protocol}: a closed port: exits within ~1 s of its work ending, one warning`, async () => {
      const r = await runApp(otlp(`http://127.0.0.1:${await freePort()}`));
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.lingerMs < EXIT_WITHIN_MS, `exited ${r.lingerMs} ms after its work ended`);
      assert.equal((r.stderr.match(/UVSCOPE_OTLP_EXPORT_FAILED/g) || []).length, 1, r.stderr);
      assert.doesNotMatch(r.stderr.replace(/.*UVSCOPE_OTLP_EXPORT_FAILED.*\n?/g, ''), /UVSCOPE_/);
    });

    it(`${protocol}: an unresolvable host (NXDOMAIN from the test DNS server): exits within ~1 s, one warning`, async () => {
      const r = await runApp(otlp(`http://${NX_HOST}:${PORTS[protocol]}`), { namespace: true });
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.lingerMs < EXIT_WITHIN_MS, `exited ${r.lingerMs} ms after its work ended`);
      assert.ok(dnsServer.count(NX_HOST) > 0, 'the exporter did ask the test DNS server');
      assert.equal((r.stderr.match(/UVSCOPE_OTLP_EXPORT_FAILED/g) || []).length, 1, r.stderr);
    });

    it(`${protocol}: a collector that accepts and never answers: exits within ~1 s, one warning`, async () => {
      const receiver = await createOtlpReceiver({ transport: TRANSPORT[protocol], hang: true });
      try {
        // Work long enough for exports to reach the collector and hang there.
        const r = await runApp(otlp(receiver.endpoint, { FIXTURE_WORK_MS: '1500' }));
        assert.equal(r.code, 0, r.stderr);
        assert.ok(r.lingerMs < EXIT_WITHIN_MS, `exited ${r.lingerMs} ms after its work ended`);
        assert.ok(receiver.requests.length >= 1, 'exports reached the collector');
        assert.equal((r.stderr.match(/UVSCOPE_OTLP_EXPORT_FAILED/g) || []).length, 1, r.stderr);
      } finally {
        await receiver.close();
      }
    });

    it(`${protocol}: a collector that is up, the default 60 s interval: the last interval leaves when the work ends, every lookup in it`, async () => {
      const receiver = await createOtlpReceiver({ transport: TRANSPORT[protocol] });
      try {
        const r = await runApp(otlp(receiver.endpoint, { OTEL_METRIC_EXPORT_INTERVAL: '60000' }));
        assert.equal(r.code, 0, r.stderr);
        assert.ok(r.lingerMs < EXIT_WITHIN_MS, `exited ${r.lingerMs} ms after its work ended`);
        assert.doesNotMatch(r.stderr, /UVSCOPE_/);
        assert.equal(receiver.requests.length, 1, 'one export: the final one');
        assert.equal(lookupCount(receiver), r.out.lookups);
      } finally {
        await receiver.close();
      }
    });
  }
});

describe('exporters never hold the process: DogStatsD', function () {
  this.timeout(60000);
  let dnsServer;
  const dd = (extra) => ({ UVSCOPE_EXPORTERS: 'datadog', UVSCOPE_DATADOG_FLUSH_INTERVAL_MS: '1000', ...extra });

  it('a closed UDP port: exits within ~1 s; UDP reports nothing, so nothing is warned', async () => {
    const r = await runApp(dd({ DD_DOGSTATSD_URL: `udp://127.0.0.1:${await freePort()}` }));
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.lingerMs < EXIT_WITHIN_MS, `exited ${r.lingerMs} ms after its work ended`);
    assert.doesNotMatch(r.stderr, /UVSCOPE_/);
  });

  it('an unresolvable Agent host (NXDOMAIN from the test DNS server): exits within ~1 s, one warning', async function () {
    requireNamespace(this);
    dnsServer = await createDnsServer({ address: NAMESERVER, port: 53 });
    try {
      const r = await runApp(dd({ DD_AGENT_HOST: NX_HOST, UVSCOPE_DATADOG_DNS_REFRESH_MS: '1000', FIXTURE_WORK_MS: '2500' }), { namespace: true });
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.lingerMs < EXIT_WITHIN_MS, `exited ${r.lingerMs} ms after its work ended`);
      assert.ok(dnsServer.count(NX_HOST) > 0, 'the exporter did ask the test DNS server');
      assert.equal((r.stderr.match(/UVSCOPE_DATADOG_AGENT_UNRESOLVED/g) || []).length, 1, r.stderr);
    } finally {
      await dnsServer.close();
    }
  });

  it('an Agent that takes datagrams and never answers (as UDP goes): exits within ~1 s, and every lookup made is sent, the last ones at exit', async () => {
    const receiver = await createDogStatsdReceiver();
    try {
      const r = await runApp(dd({ DD_DOGSTATSD_URL: `udp://127.0.0.1:${receiver.port}`, FIXTURE_WORK_MS: '0' }));
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.lingerMs < EXIT_WITHIN_MS, `exited ${r.lingerMs} ms after its work ended`);
      await new Promise((resolve) => setTimeout(resolve, 200)); // datagrams in the receiver's socket buffer
      assert.equal(receiver.find('dns.lookup.duration', ['dns_question_name:localhost']).length, r.out.lookups);
    } finally {
      await receiver.close();
    }
  });
});
