'use strict';

// uvscope's own I/O makes no span in the app's traces (lib/core/own-io.js withoutTracing, and the
// endpoint's server, lib/endpoint/server.js): the app's N lookups make exactly N dns.lookup spans
// with uvscope loaded, whatever the exporter, with the OpenTelemetry SDK (NodeTracerProvider with
// instrumentation-dns, and -net and -http when installed) and with dd-trace. Each case checks the
// own I/O it must hide did happen: the endpoint answered a scrape, the OTLP receiver got exports,
// the DogStatsD receiver got datagrams after uvscope looked up DD_AGENT_HOST=localhost.

const assert = require('node:assert/strict');
const path = require('node:path');
const { withDdAgent } = require('../helpers/dd-agent');
const { REGISTER, FIXTURES, runNode, lastJson, freePort } = require('../helpers/child');
const { createOtlpReceiver } = require('../helpers/otlp-receiver');
const { createDogStatsdReceiver } = require('../helpers/dogstatsd-receiver');
const { ddTraceInit: DD_INIT, ddTraceMajor } = require('../../support/peers');

const SETUP = path.join(FIXTURES, 'traced-setup.js');
const APP = path.join(FIXTURES, 'traced-app.js');
const NAMES = ['localhost', 'localhost', 'localhost', 'localhost', 'localhost'];
const SERVER = 1; // OpenTelemetry SpanKind.SERVER
const CLIENT = 2;

let warned = false;
function requireNetHttp(mochaContext, instrumented) {
  if (instrumented.includes('http')) return;
  // devDependencies: in CI their absence is a broken install, not a reason to check less.
  if (process.env.CI) throw new Error('@opentelemetry/instrumentation-net and -http are devDependencies but not installed');
  if (!warned) {
    warned = true;
    console.warn('[uvscope tests] @opentelemetry/instrumentation-net and -http are not installed: the OpenTelemetry cases check dns.lookup spans only');
  }
  if (mochaContext) mochaContext.skip();
}

/** What each exporter's own I/O needs, and how a case checks it happened. */
async function ownIo(exporter) {
  if (exporter === 'prometheus') {
    const port = await freePort();
    return { env: { UVSCOPE_PROMETHEUS_PORT: String(port), SCRAPE_PORT: String(port) }, check: (out) => assert.equal(out.scraped, 200), close: async () => {} };
  }
  if (exporter === 'otlp') {
    const receiver = await createOtlpReceiver();
    return {
      env: { UVSCOPE_OTLP_MODE: 'standalone', OTEL_EXPORTER_OTLP_ENDPOINT: `http://localhost:${receiver.port}`, OTEL_METRIC_EXPORT_INTERVAL: '200' },
      check: () => assert.ok(receiver.requests.length >= 2, `${receiver.requests.length} OTLP exports`),
      close: () => receiver.close(),
    };
  }
  const receiver = await createDogStatsdReceiver();
  return {
    env: { DD_AGENT_HOST: 'localhost', DD_DOGSTATSD_PORT: String(receiver.port), UVSCOPE_DATADOG_FLUSH_INTERVAL_MS: '1000' },
    check: () => assert.ok(receiver.metrics.length > 0, 'uvscope looked the Agent up and sent to it'),
    close: () => receiver.close(),
  };
}

async function runTraced({ exporter, preloads, env = {} }) {
  const io = await ownIo(exporter);
  try {
    const r = await runNode([...preloads.flatMap((p) => ['--require', p]), APP], {
      env: { UVSCOPE_EXPORTERS: exporter, UVSCOPE_INTERVAL_MS: '100', FIXTURE_NAMES: NAMES.join(','), HOLD_MS: '1300', TRACED_NET_HTTP: '1', ...io.env, ...env },
      timeoutMs: 30000,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /uvscope/, 'no warning');
    const out = lastJson(r.stdout);
    assert.deepEqual(out.errors, NAMES.map(() => null));
    io.check(out);
    return out;
  } finally {
    await io.close();
  }
}

describe('own-io: uvscope\'s own I/O makes no span in the app\'s traces', function () {
  this.timeout(60000);

  describe('OpenTelemetry (NodeTracerProvider.register(), instrumentation-dns, -net, -http)', () => {
    for (const exporter of ['prometheus', 'otlp', 'datadog']) {
      for (const order of [[REGISTER, SETUP], [SETUP, REGISTER]]) {
        const which = order[0] === REGISTER ? 'uvscope first' : 'OpenTelemetry first';
        it(`UVSCOPE_EXPORTERS=${exporter}, ${which}: ${NAMES.length} lookups make ${NAMES.length} dns.lookup spans, and no other span is uvscope's`, async function () {
          const out = await runTraced({ exporter, preloads: order });
          const lookups = out.spans.filter((s) => s.name === 'dns.lookup');
          assert.equal(lookups.length, NAMES.length, `spans: ${JSON.stringify(out.spans.map((s) => s.name))}`);
          // The app's own work is what is left: its scrape request (prometheus) and nothing else.
          const others = out.spans.filter((s) => s.name !== 'dns.lookup');
          if (out.instrumented.includes('http')) {
            const appScrape = exporter === 'prometheus' ? 1 : 0;
            assert.equal(others.filter((s) => s.kind === CLIENT && s.scope.endsWith('instrumentation-http')).length, appScrape, 'the app\'s scrape is traced, as the app\'s client request');
            assert.deepEqual(others.filter((s) => s.kind === SERVER), [], 'a scrape served on uvscope\'s port is not the app\'s server span');
            assert.equal(others.filter((s) => s.scope.endsWith('instrumentation-net')).length, appScrape, 'no connection of uvscope\'s');
          } else {
            requireNetHttp(null, out.instrumented);
            assert.deepEqual(others, []);
          }
        });
      }
    }

    it('two processes on one port: the member\'s pushes to the holder and its attempt to listen make no span in the member\'s traces, nor does serving them in the holder\'s', async () => {
      const port = await freePort();
      const env = { UVSCOPE_EXPORTERS: 'prometheus', UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '100', FIXTURE_NAMES: NAMES.join(','), TRACED_NET_HTTP: '1' };
      const preloads = ['--require', REGISTER, '--require', SETUP, APP];
      // The holder scrapes itself once the member has pushed for a while: its figures are there.
      const holding = runNode(preloads, { env: { ...env, HOLD_MS: '2500', SCRAPE_PORT: String(port) }, timeoutMs: 30000 });
      await new Promise((resolve) => setTimeout(resolve, 800));
      const member = await runNode(preloads, { env: { ...env, HOLD_MS: '2000' }, timeoutMs: 30000 });
      const holder = await holding;
      for (const r of [member, holder]) {
        assert.equal(r.code, 0, r.stderr);
        assert.doesNotMatch(r.stderr, /uvscope/, 'no warning');
      }
      const [m, h] = [lastJson(member.stdout), lastJson(holder.stdout)];
      assert.ok(h.pids.includes(m.pid), `the member pushed to the holder: ${h.pids}`);
      for (const out of [m, h]) {
        assert.equal(out.spans.filter((s) => s.name === 'dns.lookup').length, NAMES.length, JSON.stringify(out.spans.map((s) => s.name)));
        assert.deepEqual(out.spans.filter((s) => s.kind === SERVER), []);
      }
      if (m.instrumented.includes('http')) assert.deepEqual(m.spans.filter((s) => s.name !== 'dns.lookup').map((s) => s.name), [], 'no push of the member\'s');
    });

    it('twin: the app\'s own connections and requests are still traced (the instrumentations are on)', async function () {
      const out = await runTraced({ exporter: 'prometheus', preloads: [REGISTER, SETUP] });
      requireNetHttp(this, out.instrumented);
      const scrape = out.spans.find((s) => s.kind === CLIENT && s.scope.endsWith('instrumentation-http'));
      assert.ok(scrape, `the app's request made a client span: ${JSON.stringify(out.spans.map((s) => s.name))}`);
    });
  });

  describe(`dd-trace ${ddTraceMajor()} (a stand-in for its agent on 127.0.0.1)`, () => {
    for (const exporter of ['prometheus', 'otlp', 'datadog']) {
      for (const order of [[REGISTER, DD_INIT], [DD_INIT, REGISTER]]) {
        const which = order[0] === REGISTER ? 'uvscope first' : 'dd-trace first';
        it(`UVSCOPE_EXPORTERS=${exporter}, ${which}: ${NAMES.length} lookups make ${NAMES.length} dns.lookup spans, no dns.lookup_service, no web.request for a scrape, no request of uvscope's`, async () => {
          const spans = await withDdAgent((env) => runTraced({ exporter, preloads: order, env }));
          const names = spans.map((s) => `${s.name} ${s.resource}`);
          assert.equal(spans.filter((s) => s.name === 'dns.lookup').length, NAMES.length, names.join(', '));
          assert.deepEqual(spans.filter((s) => s.name === 'dns.lookup_service' || s.name === 'web.request').map((s) => s.resource), []);
          const requests = spans.filter((s) => s.name === 'http.request');
          assert.deepEqual(requests.map((s) => s.resource), exporter === 'prometheus' ? ['GET'] : [], 'only the app\'s scrape');
        });
      }
    }
  });
});
