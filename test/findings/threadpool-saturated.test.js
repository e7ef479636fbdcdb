'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const fs = require('fs');
const { REGISTER, FIXTURES, runNode, freePort } = require('../helpers/child');
const { formatReport } = require('../../lib/report/text');

// The line of the fixture that submits the pbkdf2 jobs: the call site the tracer must name.
const PBKDF2_LINE = fs.readFileSync(path.join(FIXTURES, 'threadpool-app.js'), 'utf8').split('\n').findIndex((l) => l.includes('crypto.pbkdf2(')) + 1;

/**
 * Run one scenario of test/fixtures/threadpool-app.js with the agent preloaded; returns the
 * fixture's own ground truth, the agent's snapshot and its findings by id.
 */
async function scenario(name, env = {}) {
  const port = await freePort();
  const r = await runNode(['--require', REGISTER, path.join(FIXTURES, 'threadpool-app.js')], {
    env: { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '200', FIXTURE_SCENARIO: name, ...env },
    timeoutMs: 40000,
  });
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const { truth } = lines.find((l) => l.truth);
  const mid = lines.find((l) => l.mid);
  const snapshot = lines[lines.length - 1];
  return { truth, mid: mid && mid.mid, snapshot, byId: Object.fromEntries(snapshot.findings.map((f) => [f.id, f])) };
}

describe('threadpool findings: who holds the pool (lib/findings/rules/threadpool-saturated.js)', function () {
  this.timeout(60000);

  describe('the issue 9 reproduction: 8 keep-alive clients hashing with pbkdf2 (~65 ms each) on a pool of 4, a lookup of localhost every 100 ms', function () {
    let run;
    before(async () => {
      run = await scenario('pbkdf2', { UVSCOPE_TRACER: 'off' });
    });

    it('raises threadpool-saturated, and neither threadpool-dns-saturated nor dns-no-cache', () => {
      const ids = Object.keys(run.byId);
      assert.ok(run.byId['threadpool-saturated'], `findings: ${ids}`);
      assert.ok(!run.byId['threadpool-dns-saturated'], `DNS blamed: ${run.byId['threadpool-dns-saturated'] && run.byId['threadpool-dns-saturated'].summary}`);
      assert.ok(!run.byId['dns-no-cache'], `dns-no-cache: ${run.byId['dns-no-cache'] && run.byId['dns-no-cache'].summary}`);
    });

    it('with the tracer off, says the pool is held by work Node does not list, and what DNS waits behind it', () => {
      const f = run.byId['threadpool-saturated'];
      assert.equal(f.evidence.holder.kind, 'unlisted');
      assert.match(f.summary, /held by work Node does not list \(async crypto/);
      assert.match(f.summary, /Not DNS: lookups can hold at most 2 of the 4 threads/);
      assert.equal(f.evidence.threadpoolSize, 4);
      assert.equal(f.evidence.dnsSlots, 2);
      // 8 hashes of ~65 ms for 4 threads: a job waits at least one hash for a thread.
      assert.ok(f.evidence.maxPoolWaitSeconds > 0.05, `pool wait ${f.evidence.maxPoolWaitSeconds}`);
      assert.ok(f.evidence.intervals >= 3);
      // What DNS waits behind it, against the fixture's own clock: it timed every lookup.
      const dns = f.evidence.waitingBehind.dns;
      assert.ok(run.truth.lookupMaxSeconds > 0.1, `the fixture's slowest lookup ${run.truth.lookupMaxSeconds}`);
      assert.ok(Math.abs(dns.maxLookupSeconds - run.truth.lookupMaxSeconds) < 0.02 + 0.1 * run.truth.lookupMaxSeconds,
        `slowest lookup: agent ${dns.maxLookupSeconds}, fixture ${run.truth.lookupMaxSeconds}`);
      assert.ok(dns.lookups <= run.truth.lookups && dns.lookups >= run.truth.lookups - 2, `lookups: agent ${dns.lookups}, fixture ${run.truth.lookups}`);
      assert.ok(dns.peakPending >= 2, `peak pending lookups ${dns.peakPending}`);
      assert.match(f.advice[0], /UVSCOPE_TRACER=on/);
    });
  });

  describe('the same with the tracer on (UVSCOPE_TRACER=on)', function () {
    let run;
    before(async () => {
      run = await scenario('pbkdf2', { UVSCOPE_TRACER: 'on' });
    });

    it('names crypto (pbkdf2), its share, the call site, the route and the pool size that covers it', () => {
      const f = run.byId['threadpool-saturated'];
      assert.ok(f, `findings: ${Object.keys(run.byId)}`);
      assert.ok(!run.byId['threadpool-dns-saturated'] && !run.byId['dns-no-cache'], Object.keys(run.byId).join());
      const h = f.evidence.holder;
      assert.equal(h.kind, 'crypto');
      assert.equal(h.type, 'PBKDF2REQUEST');
      assert.equal(h.name, 'pbkdf2');
      // Ground truth: 8 clients, one hash each in flight at a time.
      assert.equal(h.peakPending, 8);
      // Every request is one hash; those submitted before the first sample armed the tracer are
      // not known to it (8 at most, one per client).
      assert.ok(h.completed <= run.truth.requests && h.completed >= run.truth.requests - 16, `completed ${h.completed}, requests ${run.truth.requests}`);
      // Nothing else non-DNS ran on the pool (the agent's own probes are not counted).
      assert.equal(h.share, 1);
      assert.deepEqual(h.callers.map((c) => c.caller), [`test/fixtures/threadpool-app.js:${PBKDF2_LINE}`]);
      assert.deepEqual(h.routes.map((r) => [r.method, r.route]), [['POST', '/login']]);
      // Call sites and routes are counted as jobs are submitted (sampled), completions at callback.
      assert.ok(h.routes[0].count >= 1 && h.routes[0].count <= run.truth.requests, `route count ${h.routes[0].count}`);
      assert.match(f.summary, /^The threadpool is held by crypto \(pbkdf2\): up to 8 jobs in flight for 4 threads, 100 % of the time non-DNS jobs spent on the pool/);
      assert.match(f.summary, /submitted while serving POST \/login/);
      assert.match(f.advice[0], new RegExp(`^Move pbkdf2 \\(called from test/fixtures/threadpool-app\\.js:${PBKDF2_LINE} for POST /login\\) off the threadpool`));
      assert.match(f.advice[1], /lower pbkdf2's cost: its iterations/);
      assert.match(f.advice[2], /UV_THREADPOOL_SIZE=12 would give each of the 8 pbkdf2 jobs in flight at the peak a thread and leave today's 4/);
      assert.equal(f.evidence.tracer.mode, 'on');
      assert.ok(f.evidence.impact === undefined && f.impact.score > 0);
    });

    it('uvscope report shows what the tracer saw and since when it is armed', () => {
      assert.ok(run.mid, 'a snapshot in the middle of the load');
      const text = formatReport(run.mid);
      const t = run.mid.details.threadpool.tracer;
      assert.equal(t.armed, true);
      assert.match(text, new RegExp(`tracer \\(on\\): armed since ${new Date(t.armedSince).toISOString().replace(/\./g, '\\.')}`));
      // The last interval's jobs (its call sites and routes when some were sampled in it)...
      assert.match(text, /\n {4}crypto pbkdf2 \[PBKDF2REQUEST\]: [1-8] pending, \d+ done/, text);
      // ...and the window's, in the finding.
      assert.match(text, new RegExp(`Move pbkdf2 \\(called from test/fixtures/threadpool-app\\.js:${PBKDF2_LINE} for POST /login\\)`), text);
      assert.match(text, /pending, as the tracer counts them: crypto [1-8], zlib 0, other 0/);
      // /snapshot.json has the same, as plain JSON.
      const job = t.jobs.find((j) => j.type === 'PBKDF2REQUEST');
      assert.ok(job && job.pending >= 1 && job.pending <= 8, JSON.stringify(t.jobs));
    });
  });

  it('the pool held by fs: 4 FIFO reads block the 4 threads; the holder is fs, not DNS', async () => {
    const { byId } = await scenario('fsHeld', { UVSCOPE_TRACER: 'off' });
    const f = byId['threadpool-saturated'];
    assert.ok(f, `findings: ${Object.keys(byId)}`);
    assert.ok(!byId['threadpool-dns-saturated'], 'DNS blamed');
    assert.equal(f.evidence.holder.kind, 'fs');
    // The test holds 4 reads outstanding at all times.
    assert.equal(f.evidence.waitingBehind.fs.peakPending, 4);
    assert.match(f.summary, /held by fs work \(up to 4 fs requests pending\)/);
    assert.match(f.advice[0], /up to 4 fs requests were pending for 4 threads/);
  });

  it('pbkdf2 and file reads together, tracer off: never fs alone; the CPU-bound work Node does not list where busy threads are known, else undetermined', async () => {
    const { byId, snapshot } = await scenario('mixed', { UVSCOPE_TRACER: 'off' });
    const f = byId['threadpool-saturated'];
    assert.ok(f, `findings: ${Object.keys(byId)}`);
    assert.ok(!byId['threadpool-dns-saturated'], 'DNS blamed');
    const busy = snapshot.details.threadpool.busy;
    if (busy.available) {
      // Node 22+ names pool threads: the 4 threads were on a CPU or waiting for one.
      assert.equal(f.evidence.holder.kind, 'unlisted');
      assert.ok(f.evidence.busyThreads.computing + f.evidence.busyThreads.runnable >= 3, JSON.stringify(f.evidence.busyThreads));
      assert.match(f.summary, /pool threads were on a CPU or waiting for one/);
    } else {
      assert.equal(f.evidence.holder.kind, 'undetermined');
      assert.match(f.summary, /held by work other than DNS: the \d+ fs requests pending, if they are slow, or work Node does not list/);
      assert.match(f.advice[0], /UVSCOPE_TRACER=on/);
    }
  });

  describe('the tracer (auto) arms on the pool findings\' premise, beyond the loop\'s own delay (issue 32)', function () {
    // The Node 20 case: 8 clients each waiting on a pbkdf2 whose probes wait under 250 ms
    // (50,000 rounds: ~33 ms of CPU here, ~60-130 ms on a thread of a 2-core machine), lookups
    // of localhost now and then. Before, the tracer armed only past 250 ms: never on Node 20, where
    // busy pool threads cannot be read, and the finding named 'work Node does not list'.
    let run;
    before(async () => {
      run = await scenario('pbkdf2', { FIXTURE_ITERATIONS: '50000', FIXTURE_LOOKUP_EVERY_MS: '500' });
    });

    it('arms, and a pool finding names pbkdf2, its call site and route', () => {
      const t = run.snapshot.details.threadpool.tracer;
      assert.equal(t.mode, 'auto');
      assert.ok(t.armings >= 1, JSON.stringify({ ...t, jobs: undefined }));
      const f = run.byId['threadpool-saturated'] || run.byId['cpu-starved'];
      assert.ok(f, `findings: ${Object.keys(run.byId)}`);
      const text = [f.summary, ...f.advice].join('\n');
      assert.match(text, /pbkdf2/, text);
      assert.match(text, new RegExp(`test/fixtures/threadpool-app\\.js:${PBKDF2_LINE}\\b`), text);
      assert.match(text, /POST \/login/, text);
      if (run.byId['threadpool-saturated']) assert.equal(run.byId['threadpool-saturated'].evidence.holder.name, 'pbkdf2');
    });

    it('the lookup split says the lookups waited for a pool thread held by pbkdf2', () => {
      const text = formatReport(run.mid);
      assert.match(text, /localhost: .*, or waiting for a pool thread held by other work \(crypto \(pbkdf2\)/, text);
    });
  });

  it('a twin that must not arm it: the loop blocked 100-300 ms at a time by a synchronous parse, the pool idle', async () => {
    const { byId, truth, snapshot } = await scenario('csv');
    // Ground truth: the app's handler blocked the loop for 100, 200 and 300 ms in turn.
    assert.ok(truth.blocksMs.length >= 6, JSON.stringify(truth.blocksMs));
    assert.ok(byId['eventloop-blocked'], `findings: ${Object.keys(byId)}`);
    // The probes' answers waited for the loop: many a wait past the premise's 50 ms...
    const work = snapshot.points.find((p) => p.name === 'nodejs.uv.threadpool.queue_wait' && p.attributes['nodejs.uv.threadpool.queue'] === 'work');
    const { bounds, counts } = work.histogram;
    const over = counts.reduce((n, c, i) => n + (i > 0 && bounds[i - 1] >= 0.05 ? c : 0), 0);
    assert.ok(over >= 1, `probe waits past 50 ms: ${JSON.stringify(work.histogram)}`);
    // ...and none of it was the pool's: the tracer never armed, no pool finding.
    const t = snapshot.details.threadpool.tracer;
    assert.equal(t.armings, 0, JSON.stringify({ ...t, jobs: undefined }));
    assert.equal(t.armedSeconds, 0);
    assert.ok(!byId['threadpool-saturated'], byId['threadpool-saturated'] && byId['threadpool-saturated'].summary);
  });

  describe('healthy twins: neither threadpool finding', function () {
    for (const [name, what] of [
      ['cpu', 'a busy but healthy CPU-bound server (2 ms handlers, the loop busy all the time)'],
      ['occasional', 'occasional pbkdf2 (one login at a time, every 300 ms) that never fills the pool'],
      ['fs', 'an fs-heavy but healthy app (8 clients each reading a 256 KiB file per request)'],
    ]) {
      it(`${name}: ${what}`, async () => {
        const { byId, truth } = await scenario(name);
        assert.ok(truth.requests >= 3, `requests ${truth.requests}`);
        assert.ok(!byId['threadpool-saturated'], byId['threadpool-saturated'] && byId['threadpool-saturated'].summary);
        assert.ok(!byId['threadpool-dns-saturated'], byId['threadpool-dns-saturated'] && byId['threadpool-dns-saturated'].summary);
      });
    }
  });
});
