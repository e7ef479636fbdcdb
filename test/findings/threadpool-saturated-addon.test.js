'use strict';

// threadpool-saturated when an addon holds the pool (issue 32): work whose resource name says
// nothing (`generic`, node-addon-api's AsyncWorker default, as sharp's) named by the package that
// submitted it, and advice for threads held but not computing. Ground truth the test controls: a
// package around the test addon (test/fixtures/addon-pkg/fake-sharp.js, copied into a
// node_modules of its own, plain and scoped) whose jobs sleep a known time on their pool thread
// (on a CPU ~0 of it), 8 keep-alive clients on POST /resize calling it from a known line, one on
// POST /thumb through the scoped copy, a pool of 4; its twin, 2 clients, never fills the pool.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { FIXTURES, runNode, lastJson } = require('../helpers/child');
const { buildAddon } = require('../helpers/addon');
const { formatReport } = require('../../lib/report/text');

const APP = path.join(FIXTURES, 'addon-pkg-app.js');
const PKG_DIR = path.resolve(__dirname, '..', '..', 'test-output', 'addon-pkg');

function lineOf(marker) {
  const i = fs.readFileSync(APP, 'utf8').split('\n').findIndex((l) => l.includes(marker));
  assert.notEqual(i, -1, marker);
  return `test/fixtures/addon-pkg-app.js:${i + 1}`;
}

describe('threadpool-saturated: addon work named by its package, held but not computing', function () {
  this.timeout(60000);
  let addon;

  before(async function () {
    try {
      addon = (await buildAddon()).file;
    } catch (err) {
      if (process.env.CI) throw new Error(`the test addon must build in CI: ${err.message}`, { cause: err });
      console.warn(`[uvscope tests] skipping the addon package tests: ${err.message.split('\n')[0]}`);
      this.skip();
    }
    for (const name of ['fake-sharp', '@fake-scope/resizer']) {
      fs.mkdirSync(path.join(PKG_DIR, 'node_modules', name), { recursive: true });
      fs.copyFileSync(path.join(FIXTURES, 'addon-pkg', 'fake-sharp.js'), path.join(PKG_DIR, 'node_modules', name, 'index.js'));
    }
  });

  async function run(env = {}) {
    const r = await runNode([APP], { env: { FIXTURE_ADDON: addon, FIXTURE_PKG_DIR: PKG_DIR, UV_THREADPOOL_SIZE: '4', ...env }, timeoutMs: 30000 });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /UVSCOPE_/, r.stderr);
    const out = lastJson(r.stdout);
    return { ...out, byId: Object.fromEntries(out.snapshot.findings.map((f) => [f.id, f])) };
  }

  describe('8 clients on a pool of 4, each job sleeping 100 ms on its thread', function () {
    let out;
    before(async () => {
      out = await run();
    });

    it('the tracer names each `generic` job by the package that submitted it (scoped too), with the app\'s call into it and the route', () => {
      assert.ok(out.truth.resize > 0 && out.truth.thumb > 0, JSON.stringify(out.truth));
      assert.deepEqual(out.seen['fake-sharp (generic)'], { package: 'fake-sharp', callers: [lineOf('SUBMIT-RESIZE')], routes: ['POST /resize'] });
      assert.deepEqual(out.seen['@fake-scope/resizer (generic)'], { package: '@fake-scope/resizer', callers: [lineOf('SUBMIT-THUMB')], routes: ['POST /thumb'] });
      assert.equal(out.seen.generic, undefined, JSON.stringify(out.seen));
    });

    it('"held by fake-sharp (addon work)", with its jobs in flight, call site and route', () => {
      const f = out.byId['threadpool-saturated'];
      assert.ok(f, `findings: ${Object.keys(out.byId)}`);
      const h = f.evidence.holder;
      assert.equal(h.kind, 'other');
      assert.equal(h.package, 'fake-sharp');
      assert.equal(h.name, 'fake-sharp (addon work)');
      // Ground truth: 8 clients, one job each in flight at a time.
      assert.equal(h.peakPending, out.truth.clients);
      assert.deepEqual(h.callers.map((c) => c.caller), [lineOf('SUBMIT-RESIZE')]);
      assert.deepEqual(h.routes.map((r) => `${r.method} ${r.route}`), ['POST /resize']);
      // Each job sleeps 100 ms on a thread; with 9 clients on 4 threads it waits about as long again.
      assert.ok(h.meanSeconds >= out.truth.jobMs / 1000, String(h.meanSeconds));
      assert.match(f.summary, /^The threadpool is held by fake-sharp \(addon work\): up to 8 jobs in flight for 4 threads, .*submitted while serving POST \/resize/);
      assert.match(formatReport(out.snapshot), /held by fake-sharp \(addon work\)/);
    });

    it('advice for threads held but not computing: a larger pool, fewer concurrent calls, the addon\'s own concurrency; where the CPU is not known, it says so', () => {
      const f = out.byId['threadpool-saturated'];
      const advice = f.advice.join('\n');
      const busy = f.evidence.busyThreads;
      // Never the advice for CPU-bound work as a fact.
      assert.doesNotMatch(advice, /calling the synchronous variant|CPU-bound jobs on more threads than/, advice);
      assert.match(advice, /UV_THREADPOOL_SIZE=12/);
      assert.match(advice, new RegExp(`fewer concurrent calls into fake-sharp \\(from ${lineOf('SUBMIT-RESIZE').replace(/\./g, '\\.')} for POST /resize`));
      assert.match(advice, /fake-sharp's own concurrency setting/);
      if (busy && busy.available) {
        // Node 22+: the threads are read; the jobs sleep, ~0 of the 4 threads on a CPU.
        assert.ok(busy.computing + (busy.runnable || 0) < 0.5, JSON.stringify(busy));
        assert.match(f.advice[0], /^fake-sharp \(addon work\) holds the pool's threads without computing: 0(\.\d+)? of the 4 threads it held were on a CPU or waiting for one/);
        assert.doesNotMatch(advice, /worker_threads sized/);
      } else {
        // Node 20: pool threads are not named; what cannot be told is said, both ways given.
        assert.match(f.advice[0], /^Whether fake-sharp's jobs compute or wait on the pool's threads cannot be told here \(libuv /);
        assert.match(f.advice[0], /If they compute, move them .* If they wait/);
      }
    });
  });

  it('twin: the same jobs kept on a CPU (spinning): CPU-bound advice where busy threads are read (Node 22+), the cannot-be-told one where not', async () => {
    const out = await run({ FIXTURE_SPIN: '1', FIXTURE_SECONDS: '2' });
    const f = out.byId['threadpool-saturated'];
    assert.ok(f, `findings: ${Object.keys(out.byId)}`);
    assert.equal(f.evidence.holder.name, 'fake-sharp (addon work)');
    const busy = f.evidence.busyThreads;
    if (busy && busy.available) {
      // 4 threads spinning on the machine's CPUs: on a CPU or waiting for one, all of them.
      assert.ok(busy.computing + (busy.runnable || 0) >= 2, JSON.stringify(busy));
      assert.match(f.advice[0], /^Move fake-sharp's work \(called from .* off the threadpool: run it in worker_threads/);
      assert.doesNotMatch(f.advice.join('\n'), /without computing|cannot be told/);
    } else {
      assert.match(f.advice[0], /cannot be told here/);
    }
  });

  it('twin: 2 clients on the same package never fill the pool: no finding, the tracer never armed', async () => {
    const out = await run({ FIXTURE_CLIENTS: '2' });
    assert.ok(out.truth.resize > 10, JSON.stringify(out.truth));
    assert.ok(!out.byId['threadpool-saturated'], out.byId['threadpool-saturated'] && out.byId['threadpool-saturated'].summary);
    assert.equal(out.snapshot.details.threadpool.tracer.armings, 0);
  });
});
