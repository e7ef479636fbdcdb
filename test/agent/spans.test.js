'use strict';

// uvscope's context on the app's dns.lookup spans comes whenever a tracer is there, whatever
// UVSCOPE_EXPORTERS says (lib/agent/spans.js): here with Prometheus metrics, the common setup,
// with the OpenTelemetry SDK (NodeTracerProvider with instrumentation-dns) and with dd-trace, each
// loaded before and after uvscope; the settings still turn it off. The app starts its 5 lookups of
// localhost at once, so the k-th started with k in flight: with a pool of 4 (2 DNS slots), the
// ground truth is in_flight 0..4 and queued_ahead 0, 0, 0, 1, 2.

const assert = require('node:assert/strict');
const path = require('node:path');
const { REGISTER, FIXTURES, runNode, lastJson } = require('../helpers/child');
const { withDdAgent } = require('../helpers/dd-agent');
const { ddTraceInit: DD_INIT, ddTraceMajor } = require('../../support/peers');

const SETUP = path.join(FIXTURES, 'traced-setup.js');
const APP = path.join(FIXTURES, 'traced-app.js');
const NAMES = ['localhost', 'localhost', 'localhost', 'localhost', 'localhost'];
const IN_FLIGHT = [0, 1, 2, 3, 4];
const QUEUED_AHEAD = [0, 0, 0, 1, 2];

async function run(preloads, env) {
  const r = await runNode([...preloads.flatMap((p) => ['--require', p]), APP], {
    env: { UVSCOPE_EXPORTERS: 'prometheus', UVSCOPE_PROMETHEUS_PORT: '0', UVSCOPE_INTERVAL_MS: '100', FIXTURE_NAMES: NAMES.join(','), ...env },
    timeoutMs: 30000,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /uvscope/, 'no warning');
  const out = lastJson(r.stdout);
  assert.deepEqual(out.errors, NAMES.map(() => null));
  return out;
}

const sorted = (values) => [...values].sort((a, b) => a - b);

describe('agent/spans: uvscope\'s context on the app\'s dns.lookup spans with UVSCOPE_EXPORTERS=prometheus', function () {
  this.timeout(60000);

  for (const order of [[REGISTER, SETUP], [SETUP, REGISTER]]) {
    it(`OpenTelemetry, ${order[0] === REGISTER ? 'uvscope first' : 'OpenTelemetry first'}: every dns.lookup span carries the lookups in flight and queued ahead of it`, async () => {
      const out = await run(order, {});
      const spans = out.spans.filter((s) => s.name === 'dns.lookup');
      assert.equal(spans.length, NAMES.length, JSON.stringify(out.spans));
      assert.deepEqual(sorted(spans.map((s) => s.attributes['uvscope.dns.in_flight'])), IN_FLIGHT);
      assert.deepEqual(sorted(spans.map((s) => s.attributes['uvscope.dns.queued_ahead'])), QUEUED_AHEAD);
      for (const s of spans) {
        assert.equal(s.attributes['uvscope.dns.slots'], 2);
        assert.equal(s.attributes['uvscope.dns.threadpool_size'], 4);
        assert.match(s.attributes['uvscope.dns.caller'], /test\/fixtures\/traced-app\.js:\d+/);
      }
    });
  }

  it('twin: UVSCOPE_OTLP_TRACE_ATTRIBUTES=false puts none; the spans are still made', async () => {
    const out = await run([REGISTER, SETUP], { UVSCOPE_OTLP_TRACE_ATTRIBUTES: 'false' });
    const spans = out.spans.filter((s) => s.name === 'dns.lookup');
    assert.equal(spans.length, NAMES.length);
    assert.deepEqual(spans.flatMap((s) => Object.keys(s.attributes).filter((k) => k.startsWith('uvscope.'))), []);
  });

  it('twin: with no tracer, nothing of it is loaded and, after the agent\'s first tick, nobody listens to the app\'s lookups for it', async () => {
    const r = await runNode(['--require', REGISTER, '-e', `
      const dc = require('diagnostics_channel');
      const dns = require('dns');
      const start = dc.channel('uvscope:dns.lookup:start');
      const early = start.hasSubscribers;
      setTimeout(() => dns.lookup('localhost', () => {
        const files = Object.keys(require.cache).filter((f) => /(exporters[\\/](otlp|datadog)[\\/]spans|span-pairing)\\.js$/.test(f));
        console.log(JSON.stringify({ early, later: start.hasSubscribers, files }));
      }), 50);
    `], { env: { UVSCOPE_EXPORTERS: 'prometheus', UVSCOPE_PROMETHEUS_PORT: '0' } });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(lastJson(r.stdout), { early: true, later: false, files: [] });
  });

  describe(`dd-trace ${ddTraceMajor()}`, () => {
    for (const order of [[REGISTER, DD_INIT], [DD_INIT, REGISTER]]) {
      it(`${order[0] === REGISTER ? 'uvscope first' : 'dd-trace first'}: every dns.lookup span carries the lookups in flight and queued ahead of it`, async () => {
        const spans = await ddLookupSpans(order, {});
        assert.equal(spans.length, NAMES.length);
        assert.deepEqual(sorted(spans.map((s) => s.metrics['uvscope.dns.in_flight'])), IN_FLIGHT);
        assert.deepEqual(sorted(spans.map((s) => s.metrics['uvscope.dns.queued_ahead'])), QUEUED_AHEAD);
        for (const s of spans) {
          assert.equal(s.metrics['uvscope.threadpool.dns_slots'], 2);
          assert.equal(s.metrics['uvscope.threadpool.size'], 4);
          assert.match(s.meta['uvscope.dns.caller'], /test\/fixtures\/traced-app\.js:\d+/);
        }
      });
    }

    it('twin: UVSCOPE_DATADOG_TRACE_TAGS=false puts none; the spans are still made', async () => {
      const spans = await ddLookupSpans([REGISTER, DD_INIT], { UVSCOPE_DATADOG_TRACE_TAGS: 'false' });
      assert.equal(spans.length, NAMES.length);
      assert.deepEqual(spans.flatMap((s) => [...Object.keys(s.metrics), ...Object.keys(s.meta)].filter((k) => k.startsWith('uvscope.'))), []);
    });
  });
});

/** The dns.lookup spans dd-trace sent to a stand-in for its agent on 127.0.0.1. */
async function ddLookupSpans(preloads, env) {
  const spans = await withDdAgent((ddEnv) => run(preloads, { ...ddEnv, HOLD_MS: '300', ...env }));
  return spans.filter((s) => s.name === 'dns.lookup');
}
