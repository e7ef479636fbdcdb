'use strict';

// The blockers source against blockers the test knows (test/fixtures/blockers-app.js, run with
// --require register.js): a 400 ms spin at a known line in a known route, synchronous built-ins
// named through the app's frame, forced full GCs; and healthy twins where nothing may be named: a
// loop ~90 % busy with 2 ms callbacks, a loop that never sleeps (1 ms immediates), single 60 ms
// blocks. Durations are asserted with wide bounds (a loaded 2-core machine), what the app did is
// the truth: its spin's line, its functions, V8's own gc entries.

const assert = require('node:assert/strict');
const path = require('path');
const { runNode, lastJson, REGISTER, FIXTURES } = require('../helpers/child');

const APP = path.join(FIXTURES, 'blockers-app.js');
const FILE = 'test/fixtures/blockers-app.js';
const linux = process.platform === 'linux';

// env: a null value leaves the variable unset (the default).
async function run(scenario, env = {}) {
  const all = { UVSCOPE_INTERVAL_MS: '3600000', UVSCOPE_EXPORTERS: 'none', UVSCOPE_BLOCKERS: 'on', FIXTURE_SCENARIO: scenario, ...env };
  for (const k of Object.keys(all)) if (all[k] === null) delete all[k];
  const r = await runNode(['--expose-gc', '--require', REGISTER, APP], {
    env: all,
    timeoutMs: 30000,
  });
  assert.equal(r.code, 0, `the app exits on its own, with 0: ${r.stderr}`);
  // No failure of its own, no warning (the native capture loads on every supported Node).
  assert.doesNotMatch(r.stderr, /UVSCOPE_INTERNAL_ERROR|UVSCOPE_BLOCKERS_UNAVAILABLE/);
  return { ...lastJson(r.stdout), stderr: r.stderr };
}

const show = (blocks) => JSON.stringify(blocks.map((b) => ({ s: b.durationSeconds, gc: b.gcShare, route: b.route, top: b.blockers.slice(0, 2), uncaptured: b.uncaptured })));

describe('sources/blockers', function () {
  this.timeout(60000);
  before(function () {
    if (!linux) this.skip();
  });

  it('names a 400 ms spin at its line in GET /orders/:id, with its share and the route, and times it', async () => {
    const { blocks, points, facts, records } = await run('route');
    assert.equal(blocks.length, 1, show(blocks));
    const [b] = blocks;
    assert.ok(b.durationSeconds > 0.3 && b.durationSeconds < 2, show(blocks));
    assert.equal(b.route, 'GET /orders/:id');
    const top = b.blockers[0];
    // spinFor, or the handler it was inlined into (V8 shows an inlined callee as its caller).
    assert.equal(top.frame.file, FILE, show(blocks));
    assert.equal(top.frame.line, facts.spinLine, show(blocks));
    assert.ok(['spinFor', '(anonymous)'].includes(top.frame.function), show(blocks));
    assert.ok(top.share > 0.6, show(blocks));
    assert.equal(top.frame.package, null);
    assert.deepEqual(top.appFrame, top.frame);
    assert.ok(b.samples >= 5, show(blocks));
    assert.ok(b.gcShare < 0.2);
    const p = points.find((x) => x.attributes['nodejs.eventloop.block.cause'] === 'code');
    assert.ok(p && p.histogram.count === 1, JSON.stringify(points));
    // Its record for the tracers' victims (uvscope:eventloop.block): the same block, named as the
    // findings name it, on performance.timeOrigin + performance.now()'s scale.
    assert.equal(records.length, 1, JSON.stringify(records));
    const [r] = records;
    assert.deepEqual({ blocker: r.blocker, route: r.route, cause: r.cause }, { blocker: { name: `\`${top.appFrame.function}\``, caller: `${FILE}:${facts.spinLine}` }, route: 'GET /orders/:id', cause: 'code' });
    assert.ok(Math.abs(r.end - r.start - b.durationSeconds * 1000) < 1, JSON.stringify({ r, b }));
    // after the scenario began, to within a poll (25 ms: the block's start is the window's) and the
    // two clocks' difference (Date.now() against timeOrigin + now())
    assert.ok(r.start > facts.t0 - 100, JSON.stringify({ r, t0: facts.t0 }));
  });

  // Next to the inspector's other users and another agent's watchdog: all keep working.
  it('next to a debugger (--inspect) and another inspector session profiling the app: both see the spin, and it is named', async () => {
    const { blocks, facts } = await run('inspected', { NODE_OPTIONS: '--inspect=127.0.0.1:0' });
    assert.match(facts.inspectorUrl || '', /^ws:\/\/127\.0\.0\.1:\d+\//, 'the debugger\'s port is open');
    assert.equal(facts.profiled, true, 'the other session\'s CPU profile has spinFor');
    assert.equal(blocks.length, 1, show(blocks));
    assert.equal(blocks[0].blockers[0].frame.line, facts.spinLine, show(blocks));
  });

  it('next to dd-trace\'s profiler (its wall-time sampler, @datadog/pprof): its profile has the spin, and it is named', async () => {
    const { blocks, facts } = await run('pprofiled');
    assert.equal(facts.profiled, true, 'the wall profile has spinFor');
    assert.equal(blocks.length, 1, show(blocks));
    assert.equal(blocks[0].blockers[0].frame.line, facts.spinLine, show(blocks));
  });

  it('next to another agent\'s watchdog on the same native capture (Sentry\'s): both capture the spin', async () => {
    const { blocks, facts } = await run('watched');
    // the other watchdog's stack, 150 ms into the 400 ms spin: spinFor on top (or the handler it was inlined into)
    assert.ok(facts.otherFrames.includes('spinFor') || facts.otherFrames.includes('?'), JSON.stringify(facts.otherFrames));
    assert.equal(blocks.length, 1, show(blocks));
    assert.equal(blocks[0].blockers[0].frame.line, facts.spinLine, show(blocks));
  });

  it('names zlib.gzipSync through the app\'s frame (compressReport)', async () => {
    const { blocks } = await run('gzip');
    assert.ok(blocks.length >= 1, show(blocks));
    const all = blocks.flatMap((b) => b.blockers);
    const share = blocks[0].blockers.filter((x) => x.appFrame && x.appFrame.function === 'compressReport').reduce((a, x) => a + x.share, 0);
    assert.ok(share > 0.6, show(blocks));
    // What the app called on the way: zlib's *Sync method (whatever its own name), in node:zlib
    // (Buffer.alloc's fill, in node:buffer, may have more of the block).
    assert.ok(all.some((x) => x.call && x.call.file === 'node:zlib'), show(blocks));
  });

  it('names one long native call (crypto.pbkdf2Sync, ~1 s) through the app\'s frame: its sample is answered when the call returns', async () => {
    const { blocks } = await run('pbkdf2');
    assert.equal(blocks.length, 1, show(blocks));
    assert.ok(blocks[0].durationSeconds > 0.3, show(blocks));
    const x = blocks[0].blockers[0];
    assert.ok(x && x.appFrame && x.appFrame.function === 'hashPassword', show(blocks));
    assert.equal(x.call.function, 'pbkdf2Sync', show(blocks));
    assert.ok(x.share > 0.8, show(blocks));
  });

  it('names forced full GCs as V8\'s garbage collector (major), from V8\'s own gc entries', async () => {
    const { blocks, points } = await run('gc');
    const gc = blocks.filter((b) => b.gcShare >= 0.5);
    assert.ok(gc.length >= 1, show(blocks));
    assert.equal(gc[0].gcKind, 'major', show(blocks));
    assert.ok(gc[0].heap && gc[0].heap.usedBytes > 0, show(blocks));
    // The code's shares give the GC its time back: together they are the block, at most.
    assert.ok(gc[0].blockers.reduce((a, x) => a + x.share, 0) <= 1 - gc[0].gcShare + 1e-9, show(blocks));
    assert.ok(points.some((x) => x.attributes['nodejs.eventloop.block.cause'] === 'gc'), JSON.stringify(points));
  });

  for (const scenario of ['busy', 'chain', 'short']) {
    it(`names no blocker in the healthy twin "${scenario}"`, async () => {
      const { blocks, details, facts } = await run(scenario);
      assert.equal(details.capturing, true, details.unavailable);
      assert.equal(details.ready, true);
      if (scenario === 'busy') assert.ok(facts.elu > 0.8, `the loop was ${facts.elu} busy`);
      // Blocks that ended before the scenario began are the app's start (loading the agent's code).
      assert.deepEqual(blocks.filter((b) => b.startedMs + b.durationSeconds * 1000 > facts.t0), [], show(blocks));
    });
  }

  for (const mode of ['on', 'auto']) {
    it(`an app that ends in a block ends at once (${mode}): no capture holds its exit (the native capture waits up to 5 s for an interrupt)`, async () => {
      // Eight at once: without the gate about one run in four ends 5 s late (a run of this test
      // without it: 5,049 ms for one of six). auto: the default, armed by a first block before.
      const env = mode === 'on' ? { UVSCOPE_BLOCKERS: 'on' } : { FIXTURE_ARM: '1' };
      const runs = await Promise.all(Array.from({ length: 8 }, async () => {
        const r = await runNode(['--require', REGISTER, path.join(FIXTURES, 'blockers-end.js')], {
          env: { UVSCOPE_INTERVAL_MS: '3600000', UVSCOPE_EXPORTERS: 'none', ...env },
          timeoutMs: 30000,
        });
        const closedAt = Date.now();
        assert.equal(r.code, 0, r.stderr);
        return { ms: closedAt - lastJson(r.stdout).exitAt, armed: lastJson(r.stdout).armed };
      }));
      if (mode === 'auto') assert.deepEqual(runs.map((x) => x.armed), Array(8).fill(true));
      const ends = runs.map((x) => x.ms);
      assert.ok(Math.max(...ends) < 2500, `ended ${ends.join(', ')} ms after its exit event`);
    });
  }

  describe('by default (auto): the capture starts at the first block', () => {
    it('400 ms spins in GET /orders/:id: the first timed and said not seen into, the later ones named at their line', async () => {
      const { details, blocks, facts } = await run('twice', { UVSCOPE_BLOCKERS: null });
      assert.equal(details.mode, 'auto');
      assert.equal(details.armed, true);
      assert.equal(details.armings, 1);
      const mine = blocks.filter((b) => b.startedMs + b.durationSeconds * 1000 > facts.t0);
      // the first: timed (the loop's delay) with no samples, and why
      assert.equal(mine[0].samples, 0, show(mine));
      assert.ok(mine[0].durationSeconds > 0.3 && mine[0].durationSeconds < 2, show(mine));
      assert.match(mine[0].uncaptured, /capture starts at the first block/);
      // the three after it: named
      const named = mine.slice(1);
      assert.equal(named.length, 3, show(mine));
      for (const b of named) {
        assert.equal(b.route, 'GET /orders/:id', show(mine));
        assert.equal(b.blockers[0].frame.file, FILE, show(mine));
        assert.equal(b.blockers[0].frame.line, facts.spinLine, show(mine));
      }
    });

    it('a native capture that cannot load: no warning (the user did not ask for it), details say why from the first block, the app goes on', async () => {
      const r = await runNode(['--require', REGISTER, APP], {
        env: { UVSCOPE_INTERVAL_MS: '3600000', UVSCOPE_EXPORTERS: 'none', FIXTURE_SCENARIO: 'twice', SENTRY_STACK_TRACE_BINARY_PATH: path.join(FIXTURES, 'no-such-binary.node') },
        timeoutMs: 30000,
      });
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stderr, /UVSCOPE_BLOCKERS_UNAVAILABLE|UVSCOPE_INTERNAL_ERROR/);
      const { details } = lastJson(r.stdout);
      assert.equal(details.capturing, false);
      assert.equal(details.armed, false);
      assert.match(details.unavailable, /native stack capture/);
    });

    for (const scenario of ['busy', 'chain', 'short']) {
      it(`the healthy twin "${scenario}" never starts it: not armed, no thread more than with it off`, async () => {
        const [auto, off] = await Promise.all([run(scenario, { UVSCOPE_BLOCKERS: null }), run(scenario, { UVSCOPE_BLOCKERS: 'off' })]);
        assert.equal(auto.details.capturing, true, auto.details.unavailable);
        assert.equal(auto.details.armed, false);
        assert.equal(auto.details.armings, 0);
        assert.deepEqual(auto.blocks, []);
        assert.equal(auto.facts.threads, off.facts.threads);
      });
    }

    it('starts at a block, stops after the quiet period (the worker gone, its listeners removed), starts again', async () => {
      const { createBlockersSampler } = require('../../lib/sources/blockers/capture');
      const dc = require('diagnostics_channel');
      const threads = () => require('fs').readdirSync('/proc/self/task').length;
      const until = async (what, ms) => {
        const end = Date.now() + ms;
        while (!what() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
        return what();
      };
      // The event-loop source's reading of the interval, as the tick hands it on.
      const loop = (lateSeconds) => ({ lateSeconds, spanSeconds: lateSeconds + 0.1, mainThreadCpuSeconds: lateSeconds, mainThreadWaitSeconds: 0, blockedOnCpuMaxSeconds: lateSeconds });
      const healthy = { resources: new Map(), loop: loop(0.05) };
      const blocked = { resources: new Map(), loop: loop(0.25) };
      const base = threads();
      const sampler = createBlockersSampler({ mode: 'auto', thresholdMs: 100, quietMs: 300 });
      try {
        sampler.sample(healthy);
        assert.equal(sampler.details().armed, false);
        assert.equal(threads(), base);
        assert.equal(dc.hasSubscribers('http.server.request.start'), false);
        sampler.endInterval();
        sampler.sample(blocked);
        const d = sampler.details();
        assert.equal(d.armed, true);
        assert.equal(d.blocks.length, 1);
        assert.equal(d.blocks[0].durationSeconds, 0.25);
        assert.ok(await until(() => sampler.details().ready, 10000), 'the watchdog started');
        assert.equal(threads(), base + 1);
        assert.equal(dc.hasSubscribers('http.server.request.start'), true);
        sampler.endInterval();
        sampler.sample(healthy); // within the quiet period
        assert.equal(sampler.details().armed, true);
        await new Promise((r) => setTimeout(r, 350));
        sampler.sample(healthy);
        assert.equal(sampler.details().armed, false);
        assert.equal(dc.hasSubscribers('http.server.request.start'), false);
        assert.ok(await until(() => threads() === base, 5000), `threads ${threads()}, ${base} before`);
        sampler.endInterval();
        sampler.sample(blocked);
        assert.equal(sampler.details().armed, true);
        assert.equal(sampler.details().armings, 2);
        assert.ok(await until(() => sampler.details().ready, 10000), 'the watchdog started again');
      } finally {
        sampler.close();
      }
      assert.ok(await until(() => threads() === base, 5000), `threads ${threads()} after close, ${base} before`);
    });
  });

  it('UVSCOPE_BLOCKERS=off starts no watchdog, and says so', async () => {
    const { details, blocks, stderr } = await run('route', { UVSCOPE_BLOCKERS: 'off' });
    assert.equal(details.capturing, false);
    assert.match(details.unavailable, /off/);
    assert.deepEqual(blocks, []);
    assert.doesNotMatch(stderr, /UVSCOPE_BLOCKERS_UNAVAILABLE/);
  });

  it('a native capture that cannot load: one warning naming why, details say so, the app goes on', async () => {
    const r = await runNode(['--require', REGISTER, APP], {
      env: { UVSCOPE_INTERVAL_MS: '3600000', UVSCOPE_EXPORTERS: 'none', UVSCOPE_BLOCKERS: 'on', FIXTURE_SCENARIO: 'route', SENTRY_STACK_TRACE_BINARY_PATH: path.join(FIXTURES, 'no-such-binary.node') },
      timeoutMs: 30000,
    });
    assert.equal(r.code, 0, r.stderr);
    const { details, blocks } = lastJson(r.stdout);
    assert.equal(details.capturing, false);
    assert.match(details.unavailable, /native stack capture .* could not load for linux-\w+ ABI \d+/);
    assert.deepEqual(blocks, []);
    assert.equal(r.stderr.match(/UVSCOPE_BLOCKERS_UNAVAILABLE/g).length, 1, r.stderr);
  });

  it('a watchdog that fails: one warning, details say so, the app goes on', async () => {
    const { createBlockersSampler } = require('../../lib/sources/blockers/capture');
    const warnings = [];
    const original = process.emitWarning;
    process.emitWarning = (m, o) => warnings.push({ m: String(m), code: o && o.code });
    let sampler;
    try {
      sampler = createBlockersSampler({ mode: 'on', workerFile: path.join(FIXTURES, 'blockers-broken-worker.js') });
      await new Promise((r) => setTimeout(r, 1000));
      const d = sampler.details();
      assert.equal(d.capturing, false);
      assert.match(d.unavailable, /watchdog thread failed/);
      assert.deepEqual(sampler.sample(), []);
    } finally {
      process.emitWarning = original;
      if (sampler) sampler.close();
    }
    assert.equal(warnings.filter((w) => w.code === 'UVSCOPE_BLOCKERS_UNAVAILABLE').length, 1, JSON.stringify(warnings));
  });
});
