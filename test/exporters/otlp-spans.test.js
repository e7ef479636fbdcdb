'use strict';

// uvscope's context on OpenTelemetry dns.lookup spans (exporters/otlp/spans.js), with the real
// SDK and @opentelemetry/instrumentation-dns, both lines: SDK 2 (sdk-trace-base 2,
// instrumentation-dns 0.66, from the root) and SDK 3 (sdk-trace 3, instrumentation-dns 0.67, from
// peers/, Node 22.15+), each preloaded before and after uvscope.

const assert = require('node:assert/strict');
const path = require('node:path');
const { withDnsServer } = require('../helpers/dns-server');
const { runInNamespace, resolvConf } = require('../helpers/namespace');
const { REGISTER, FIXTURES, lastJson } = require('../helpers/child');

const SETUP = path.join(FIXTURES, 'otlp-trace-setup.js');
const APP = path.join(FIXTURES, 'otlp-trace-app.js');
const NAMESERVER = '127.0.0.9';
const [major, minor] = process.versions.node.split('.').map(Number);
const SDK3 = major > 22 || (major === 22 && minor >= 15);

let warned = false;
function requireSdk3(mochaContext) {
  if (SDK3) return;
  if (!warned) {
    warned = true;
    console.warn(`[uvscope tests] skipping the OpenTelemetry SDK 3 line (peers/): it needs Node 22.15+, this is ${process.version}`);
  }
  mochaContext.skip();
}

async function runApp({ line, order, names, env = {} }) {
  const requires = order.flatMap((m) => ['--require', m === 'uvscope' ? REGISTER : SETUP]);
  const r = await runInNamespace({
    resolvConf: resolvConf({ nameserver: NAMESERVER }),
    args: [...requires, APP],
    env: {
      UVSCOPE_EXPORTERS: 'otlp',
      UVSCOPE_OTLP_MODE: 'companion', // no MeterProvider here: metrics wait, nothing is sent
      UVSCOPE_INTERVAL_MS: '100',
      OTEL_LINE: String(line),
      FIXTURE_NAMES: names.join(','),
      ...env,
    },
    timeoutMs: 30000,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /uvscope/, 'no warning');
  return lastJson(r.stdout);
}

const uvscopeKeys = (span) => Object.keys(span.attributes).filter((k) => k.startsWith('uvscope.'));

describe('exporters/otlp: uvscope\'s context on OpenTelemetry dns.lookup spans (the real SDK and instrumentation-dns)', function () {
  this.timeout(60000);
  withDnsServer({ address: NAMESERVER, names: { '*.slow.test': { a: '127.0.0.1', delayMs: 300 } } });

  for (const line of [2, 3]) {
    for (const order of [['otel', 'uvscope'], ['uvscope', 'otel']]) {
      it(`SDK ${line} line, --require ${order.join(' --require ')}: the span of a lookup queued behind N others carries N; every lookup timed once`, async function () {
        if (line === 3) requireSdk3(this);
        const names = Array.from({ length: 6 }, (_, i) => `n${i}.slow.test`);
        const out = await runApp({ line, order, names });
        assert.deepEqual(out.errors, names.map(() => null));
        assert.equal(out.timed, 6, 'uvscope timed each lookup once');
        const spans = out.spans.filter((s) => 'uvscope.dns.in_flight' in s.attributes);
        assert.equal(spans.length, 6, `spans: ${JSON.stringify(out.spans)}`);
        // 6 lookups at once, 2 DNS slots (pool of 4): 0, 1, 2 lookups ahead run or wait for a slot.
        assert.deepEqual(spans.map((s) => s.attributes['uvscope.dns.queued_ahead']).sort(), [0, 0, 0, 1, 2, 3]);
        assert.deepEqual(spans.map((s) => s.attributes['uvscope.dns.in_flight']).sort(), [0, 1, 2, 3, 4, 5]);
        for (const s of spans) {
          assert.equal(s.attributes['uvscope.dns.slots'], 2);
          assert.equal(s.attributes['uvscope.dns.threadpool_size'], 4);
          assert.match(s.attributes['uvscope.dns.caller'], /test\/fixtures\/otlp-trace-app\.js:\d+/);
        }
        // The lookup that queued behind 3 waited for the backlog: its span is at least one answer delay longer.
        const last = spans.find((s) => s.attributes['uvscope.dns.queued_ahead'] === 3);
        assert.ok(last.ms >= 550, `queued lookup took ${last.ms} ms`);
      });
    }
  }

  it('twins: UVSCOPE_OTLP_TRACE_ATTRIBUTES=false puts no uvscope.* attribute; with no tracer provider nothing breaks and no stack is captured for spans', async () => {
    const names = ['a.slow.test', 'b.slow.test'];
    const on = await runApp({ line: 2, order: ['uvscope', 'otel'], names });
    const off = await runApp({ line: 2, order: ['uvscope', 'otel'], names, env: { UVSCOPE_OTLP_TRACE_ATTRIBUTES: 'false' } });
    const none = await runApp({ line: 2, order: ['uvscope', 'otel'], names, env: { OTEL_NO_PROVIDER: '1' } });
    assert.equal(on.spans.filter((s) => uvscopeKeys(s).length > 0).length, 2);
    assert.ok(off.spans.length >= 2, 'instrumentation-dns still makes its spans');
    assert.deepEqual(off.spans.flatMap(uvscopeKeys), []);
    assert.deepEqual(none.spans, []);
    for (const out of [on, off, none]) {
      assert.deepEqual(out.errors, [null, null]);
      assert.equal(out.timed, 2);
    }
    // Stack captures during the lookups: the DNS sampler's own (a name's first lookup) in each,
    // and one caller capture more per span only when a span is tagged. A caller capture takes one
    // stack of 10 frames, or a second of 40 when the app's frame lies deeper (instrumentation-dns
    // and the SDK's span processor add frames above it): 1 or 2 calls per tagged span.
    assert.equal(none.stacks, off.stacks);
    assert.ok(on.stacks >= off.stacks + 2 && on.stacks <= off.stacks + 4, `${on.stacks} stacks tagged, ${off.stacks} untagged`);
  });
});
