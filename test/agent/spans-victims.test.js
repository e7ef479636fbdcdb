'use strict';

// A block's victims in the app's traces (lib/core/block-victims.js, issue 32 item 3): an HTTP app
// (test/fixtures/victims-app.js) serves /wait, then /block, whose handler spins the loop 150 ms
// and publishes the block's record as the watchdog does (test/helpers/block.js), then /quick once
// the record is in. Ground truth: the record's start and end, measured around the spin. /wait and
// /block were open across the block: their server spans carry it; /quick started after: nothing.
// With the OpenTelemetry SDK and its http instrumentation (SDK 2), the SDK 3 line where it runs
// (the app's own server spans: see victims-setup.js), and dd-trace; each loaded before and after
// uvscope; the settings turn it off.

const assert = require('node:assert/strict');
const path = require('node:path');
const { REGISTER, FIXTURES, runNode, lastJson } = require('../helpers/child');
const { withDdAgent } = require('../helpers/dd-agent');
const { ddTraceInit: DD_INIT, ddTraceMajor, otelSdkMajor } = require('../../support/peers');

const SETUP = path.join(FIXTURES, 'victims-setup.js');
const APP = path.join(FIXTURES, 'victims-app.js');
const BLOCK_MS = 150;
// The spans' clocks against the record's: OpenTelemetry's is the same performance.now() (the
// figure is rounded to 0.1 ms); dd-trace's span start is Date.now()-based, whole milliseconds.
const TOLERANCE_MS = 1.5;
const KEYS = ['uvscope.eventloop.blocked_ms', 'uvscope.eventloop.blocker', 'uvscope.eventloop.blocker.caller', 'uvscope.eventloop.blocker.route', 'uvscope.eventloop.block.cause'];

async function run(preloads, env, { warning = false } = {}) {
  const r = await runNode([...preloads.flatMap((p) => ['--require', p]), APP], {
    env: { UVSCOPE_EXPORTERS: 'prometheus', UVSCOPE_PROMETHEUS_PORT: '0', UVSCOPE_INTERVAL_MS: '100', BLOCK_MS: String(BLOCK_MS), BLOCK_RESPOND: 'later', ...env },
    timeoutMs: 30000,
  });
  assert.equal(r.code, 0, r.stderr);
  if (!warning) assert.doesNotMatch(r.stderr, /uvscope/i, 'no warning');
  const out = lastJson(r.stdout);
  out.stderr = r.stderr;
  return out;
}

/** The one block's length, as the app measured it around its spin. */
function truth(out) {
  assert.equal(out.records.length, 1);
  const [record] = out.records;
  assert.ok(record.end - record.start >= BLOCK_MS, JSON.stringify(record));
  return record.end - record.start;
}

/** Tags of the span serving path, by the tracer's view (attributes, or dd-trace's meta and metrics). */
function victimTags(spans, p) {
  const found = spans.filter((s) => s.path === p);
  assert.equal(found.length, 1, `one server span for ${p}: ${JSON.stringify(spans)}`);
  return found[0].tags;
}

function assertVictim(tags, blockMs, label) {
  assert.ok(Math.abs(tags['uvscope.eventloop.blocked_ms'] - blockMs) <= TOLERANCE_MS, `${label}: blocked_ms ${tags['uvscope.eventloop.blocked_ms']}, the block ${blockMs}`);
  assert.equal(tags['uvscope.eventloop.blocker'], 'parseCsv', label);
  assert.equal(tags['uvscope.eventloop.blocker.caller'], 'src/import.js:9', label);
  assert.equal(tags['uvscope.eventloop.blocker.route'], 'GET /block', label);
  assert.equal(tags['uvscope.eventloop.block.cause'], 'code', label);
}
const assertNone = (tags, label) => assert.deepEqual(KEYS.filter((k) => k in tags), [], label);

// OpenTelemetry's server spans (kind 1) as { path, tags }.
const otelServerSpans = (out) => out.spans.filter((s) => s.kind === 1).map((s) => ({ path: s.path, tags: s.attributes }));

function assertVictims(spans, blockMs) {
  assertVictim(victimTags(spans, '/wait'), blockMs, '/wait, waiting across the block');
  assertVictim(victimTags(spans, '/block'), blockMs, '/block, the blocker\'s own request');
  assertNone(victimTags(spans, '/quick'), '/quick, started after the block');
}

describe('agent/spans: a block\'s victims in the app\'s traces', function () {
  this.timeout(60000);

  describe('OpenTelemetry SDK 2 with its http instrumentation', () => {
    for (const order of [[REGISTER, SETUP], [SETUP, REGISTER]]) {
      it(`${order[0] === REGISTER ? 'uvscope first' : 'OpenTelemetry first'}: the requests open across a 150 ms block carry its time and blocker; one after it, nothing`, async () => {
        const out = await run(order, { VICTIMS_SDK: 'root' });
        assertVictims(otelServerSpans(out), truth(out));
        // the app's client span for /wait was open across it too
        const client = out.spans.filter((s) => s.kind === 2 && /\/wait$/.test(s.path));
        assert.equal(client.length, 1);
        assertVictim(client[0].attributes, truth(out), 'the client span of /wait');
      });
    }

    it('a request answered inside the blocking callback ended before the record arrived: its span, closed, is left as it is', async () => {
      const out = await run([REGISTER, SETUP], { VICTIMS_SDK: 'root', BLOCK_RESPOND: 'sync' });
      const spans = otelServerSpans(out);
      assertVictim(victimTags(spans, '/wait'), truth(out), '/wait');
      assertNone(victimTags(spans, '/block'), '/block');
    });

    it('twin: a block nobody reported (no record) tags nothing', async () => {
      const out = await run([REGISTER, SETUP], { VICTIMS_SDK: 'root', BLOCK_RECORD: '0' });
      assert.deepEqual(out.records, []);
      for (const s of out.spans) assertNone(s.attributes, s.path);
      assert.equal(out.spans.filter((s) => s.kind === 1).length, 3);
    });

    it('twin: UVSCOPE_OTLP_TRACE_ATTRIBUTES=false puts none; the spans are still made', async () => {
      const out = await run([REGISTER, SETUP], { VICTIMS_SDK: 'root', UVSCOPE_OTLP_TRACE_ATTRIBUTES: 'false' });
      assert.equal(out.records.length, 1);
      assert.equal(out.spans.filter((s) => s.kind === 1).length, 3);
      for (const s of out.spans) assertNone(s.attributes, s.path);
    });

    it('a failure in uvscope\'s handler of the record stays in uvscope: one warning, the app answers and exits', async () => {
      const out = await run([REGISTER, SETUP], { VICTIMS_SDK: 'root', UVSCOPE_TEST_FAULTS: 'channel:otlp' }, { warning: true });
      assert.equal(out.stderr.match(/\[UVSCOPE_INTERNAL_ERROR\] Warning: uvscope: exporter:otlp failed/g).length, 1, out.stderr);
      assert.equal(out.records.length, 1);
      assert.equal(out.spans.filter((s) => s.kind === 1).length, 3);
      for (const s of out.spans) assertNone(s.attributes, s.path);
    });
  });

  it('keeps no span past a sample once it ended: spans ended under one still open are let go at the next sample', async () => {
    // Ten spans end under an eleventh still open (so none is popped at its end), nothing of the SDK
    // keeps them (no processor but uvscope's): uvscope holds them until its next sample, then not.
    const r = await runNode(['--expose-gc', '--require', REGISTER, '-e', `
      const path = require('path');
      const req = require('module').createRequire(path.join(process.cwd(), 'package.json'));
      new (req('@opentelemetry/sdk-trace-node').NodeTracerProvider)().register();
      const tracer = req('@opentelemetry/api').trace.getTracer('t');
      const alive = (refs) => refs.filter((r) => r.deref() !== undefined).length;
      setTimeout(() => {
        let spans = Array.from({ length: 10 }, () => tracer.startSpan('s'));
        const open = tracer.startSpan('open');
        const refs = spans.map((s) => new WeakRef(s));
        for (const s of spans) s.end();
        spans = null;
        setImmediate(() => {
          gc();
          const held = alive(refs);
          setTimeout(() => {
            gc();
            console.log(JSON.stringify({ held, after: alive(refs), open: open.ended }));
          }, 2500);
        });
      }, 1500);
    `], { env: { UVSCOPE_EXPORTERS: 'prometheus', UVSCOPE_PROMETHEUS_PORT: '0', UVSCOPE_INTERVAL_MS: '1000' }, timeoutMs: 30000 });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(lastJson(r.stdout), { held: 10, after: 0, open: false });
  });

  (otelSdkMajor() >= 3 ? describe : describe.skip)('OpenTelemetry SDK 3 (peers/), the app\'s own server spans', () => {
    for (const order of [[REGISTER, SETUP], [SETUP, REGISTER]]) {
      it(`${order[0] === REGISTER ? 'uvscope first' : 'OpenTelemetry first'}: the requests open across the block carry it; one after it, nothing`, async () => {
        const out = await run(order, { VICTIMS_SDK: 'peers' });
        assertVictims(otelServerSpans(out), truth(out));
      });
    }
  });

  describe(`dd-trace ${ddTraceMajor()}`, () => {
    // dd-trace's web.request spans as { path, tags }, and the records the app printed.
    async function ddRun(preloads, env, expect) {
      let out;
      const spans = await withDdAgent(async (ddEnv) => {
        out = await run(preloads, { ...ddEnv, HOLD_MS: '300', ...env }, expect);
      });
      const server = spans.filter((s) => s.name === 'web.request')
        .map((s) => ({ path: new URL(s.meta['http.url']).pathname, tags: { ...s.meta, ...s.metrics } }));
      return { out, server };
    }

    for (const order of [[REGISTER, DD_INIT], [DD_INIT, REGISTER]]) {
      it(`${order[0] === REGISTER ? 'uvscope first' : 'dd-trace first'}: the requests open across a 150 ms block carry its time and blocker; one after it, nothing`, async () => {
        const { out, server } = await ddRun(order, {});
        assertVictims(server, truth(out));
      });
    }

    it('a failure in uvscope\'s handler of the record stays in uvscope: one warning, the app answers and exits', async () => {
      const { out, server } = await ddRun([REGISTER, DD_INIT], { UVSCOPE_TEST_FAULTS: 'channel:datadog.spans' }, { warning: true });
      assert.equal(out.stderr.match(/\[UVSCOPE_INTERNAL_ERROR\] Warning: uvscope: exporter:datadog failed/g).length, 1, out.stderr);
      assert.equal(server.length, 3);
      for (const s of server) assertNone(s.tags, s.path);
    });

    it('twin: UVSCOPE_DATADOG_TRACE_TAGS=false puts none; the spans are still made', async () => {
      const { out, server } = await ddRun([REGISTER, DD_INIT], { UVSCOPE_DATADOG_TRACE_TAGS: 'false' });
      assert.equal(out.records.length, 1);
      assert.equal(server.length, 3);
      for (const s of server) assertNone(s.tags, s.path);
    });
  });
});
