'use strict';

// Every internal failure is contained (issue 11): with a fault injected at each seam of uvscope in
// turn (lib/core/faults.js, UVSCOPE_TEST_FAULTS), the app sees exactly what it sees without the agent,
// uvscope warns once for that cause and counts it in uvscope_errors_total, and everything else of
// uvscope goes on. A failed start() is undone, so a later start() succeeds.

const assert = require('node:assert/strict');
const path = require('node:path');
const { REGISTER, FIXTURES, runNode, lastJson } = require('./helpers/child');
const { createOtlpReceiver } = require('./helpers/otlp-receiver');
const { SEAMS } = require('../lib/core/faults');

const APP = path.join(FIXTURES, 'containment-app.js');
// Every sampler and exporter the lists declare: a new one is put through every seam with no edit here.
const SAMPLERS = require('../lib/sources').SOURCES.map((s) => s.name);
const EXPORTERS = require('../exporters').EXPORTERS.map((e) => e.name);

// seam -> the component its failure is reported and counted under
const CASES = {
  ...Object.fromEntries(SAMPLERS.map((s) => [`create:sampler:${s}`, `sampler:${s}`])),
  ...Object.fromEntries(SAMPLERS.map((s) => [`sample:${s}`, `sampler:${s}`])),
  'details:dns': 'sampler:dns',
  'details:connections': 'sampler:connections',
  ...Object.fromEntries(EXPORTERS.map((e) => [`create:exporter:${e}`, `exporter:${e}`])),
  ...Object.fromEntries(EXPORTERS.map((e) => [`export:${e}`, `exporter:${e}`])),
  findings: 'findings',
  'dns:started': 'sampler:dns',
  'dns:record': 'sampler:dns',
  'channel:connections': 'sampler:connections',
  'channel:otlp': 'exporter:otlp',
  'channel:datadog.lookups': 'exporter:datadog',
  'channel:datadog.spans': 'exporter:datadog',
  'datadog:address': 'exporter:datadog',
};

describe('containment: a failure inside uvscope never reaches the app', function () {
  this.timeout(180000);
  let receiver;
  let baseline;

  function env(extra) {
    return {
      UVSCOPE_EXPORTERS: EXPORTERS.join(','),
      UVSCOPE_PROMETHEUS_PORT: '0',
      UVSCOPE_INTERVAL_MS: '100',
      DD_DOGSTATSD_URL: 'udp://127.0.0.1:9',
      UVSCOPE_DATADOG_FLUSH_INTERVAL_MS: '1000',
      UVSCOPE_OTLP_MODE: 'standalone',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_METRIC_EXPORT_INTERVAL: '60000',
      OTEL_TRACES_EXPORTER: 'none',
      ...extra,
    };
  }

  before(async () => {
    receiver = await createOtlpReceiver();
    const r = await runNode([APP], { env: env({}) });
    assert.equal(r.code, 0, r.stderr);
    baseline = lastJson(r.stdout);
    assert.equal(baseline.agent, null);
  });
  after(async () => {
    if (receiver) await receiver.close();
  });

  it('every seam lib/core/faults.js lists is tested here', () => {
    for (const seam of SEAMS) if (seam !== 'agent:start') assert.ok(seam in CASES, seam);
  });

  it('with no fault: the same results, no warning, no error counted', async () => {
    const r = await runNode(['--require', REGISTER, APP], { env: env({ FIXTURE_WITH_AGENT: '1' }) });
    assert.equal(r.code, 0, r.stderr);
    const out = lastJson(r.stdout);
    assert.deepEqual(out.results, baseline.results);
    assert.deepEqual(out.agent.errors, {});
    assert.doesNotMatch(r.stderr, /UVSCOPE_/);
    assert.deepEqual(out.agent.exporters, EXPORTERS);
    assert.deepEqual(out.agent.samplers, SAMPLERS);
  });

  // Two at a time: each case is a child of about a second.
  const entries = Object.entries(CASES);
  for (let i = 0; i < entries.length; i += 2) {
    const pair = entries.slice(i, i + 2);
    it(`a fault at ${pair.map(([seam]) => seam).join(', then at ')}: the app's results unchanged, one warning naming the component, a count in uvscope_errors_total`, async () => {
      await Promise.all(pair.map(async ([seam, component]) => {
        const r = await runNode(['--require', REGISTER, APP], { env: env({ FIXTURE_WITH_AGENT: '1', UVSCOPE_TEST_FAULTS: seam }) });
        assert.equal(r.code, 0, `${seam}: ${r.stderr}`);
        const out = lastJson(r.stdout);
        assert.deepEqual(out.results, baseline.results, seam);
        const warnings = r.stderr.match(/\[UVSCOPE_[A-Z_]+\]/g) || [];
        assert.deepEqual(warnings, ['[UVSCOPE_INTERNAL_ERROR]'], `${seam}: ${r.stderr}`);
        assert.match(r.stderr, new RegExp(`uvscope: ${component} failed .*uvscope test fault at ${seam}`), seam);
        assert.deepEqual(Object.keys(out.agent.errors), [component], `${seam}: ${JSON.stringify(out.agent.errors)}`);
        assert.ok(out.agent.errors[component] >= 1, seam);
        if (seam === 'export:prometheus') {
          assert.equal(out.agent.scrape.status, 500, 'the scrape fails, the app does not');
        } else if (!seam.endsWith(':prometheus')) {
          assert.equal(out.agent.scrape.status, 200, seam);
          assert.equal(out.agent.scrape.errors[component] >= 1, true, `${seam}: uvscope_errors_total on the endpoint`);
        }
      }));
    });
  }

  it('a failed start() undoes what it did (dns.lookup, the guard), and a later start() succeeds', async () => {
    const code = `
      const dns = require('dns');
      const uvscope = require(${JSON.stringify(path.join(__dirname, '..', 'lib', 'index.js'))});
      const original = dns.lookup;
      const first = uvscope.start({ exporters: ['prometheus'] });
      const undone = { returned: first, restored: dns.lookup === original, guard: uvscope.getAgent() };
      const second = uvscope.start({ exporters: ['prometheus'] });
      dns.lookup('localhost', (err, address) => {
        const host = second.samplers.find((s) => s.name === 'dns').details().hosts.find((h) => h.name === 'localhost');
        console.log(JSON.stringify({ undone, second: second === uvscope.getAgent(), wrapped: dns.lookup !== original, address, counted: host && host.totalLookups }));
        uvscope.stop();
      });`;
    const r = await runNode(['-e', code], { env: { UVSCOPE_PROMETHEUS_PORT: '0', UVSCOPE_TEST_FAULTS: 'agent:start@1' } });
    assert.equal(r.code, 0, r.stderr);
    const out = lastJson(r.stdout);
    assert.deepEqual(out.undone, { returned: null, restored: true, guard: null });
    assert.deepEqual({ ...out, undone: undefined }, { undone: undefined, second: true, wrapped: true, address: '127.0.0.1', counted: 1 });
    assert.equal((r.stderr.match(/UVSCOPE_INTERNAL_ERROR/g) || []).length, 1, r.stderr);
    assert.match(r.stderr, /uvscope: start failed/);
  });
});
