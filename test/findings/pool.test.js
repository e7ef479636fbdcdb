'use strict';

// summarizePool (lib/findings/pool.js): a summary's pending and tracer parts are either the shared
// objects of an idle interval or the summary's own, made once and reused as the summary is; its
// probes' waits and busy-thread reading are read back as they came, from the window's cells or a
// copy, and its readers keep nothing.

const assert = require('node:assert/strict');
const { summarizePool, poolWait, probeWait } = require('../../lib/findings/pool');
const { windowColumns, summarizeInterval } = require('../../lib/findings/window');
const { deriveSignals } = require('../../lib/findings/signals');
const { LIMITS } = require('../../lib/findings/engine');

const pendingPoints = (counts) => Object.entries(counts).map(([kind, value]) => ({ name: 'nodejs.uv.threadpool.pending', attributes: { 'nodejs.uv.threadpool.kind': kind }, value }));
const sample = (counts, tracer) => ({ time: 0, points: pendingPoints(counts), details: { threadpool: { size: 4, dnsSlots: 2, tracer } } });
const IDLE = { mode: 'auto', armed: false, armedSince: null, jobs: [] };
const ARMED = { mode: 'auto', armed: true, armedSince: 1000, jobs: [{ kind: 'crypto', type: 'PBKDF2REQUEST', pending: 3, completed: 1 }] };

describe('findings/pool: summarizePool\'s pending and tracer parts', () => {
  it('an idle interval shares one object; a busy one writes the summary\'s own, the same one each time the summary is reused', () => {
    const busy = summarizePool(sample({ dns: 1, fs: 2 }, ARMED), null, 1);
    const ownPending = busy.pending;
    const ownTracer = busy.tracer;
    assert.deepEqual({ ...ownPending }, { dns: 1, fs: 2, crypto: 0, zlib: 0, other: 0 });
    assert.equal(ownTracer.armed, true);
    assert.equal(ownTracer.jobs, ARMED.jobs);

    const idle = summarizePool(sample({ dns: 0, fs: 0 }, IDLE), null, 1, busy);
    assert.equal(idle, busy, 'the summary is reused');
    const other = summarizePool(sample({ dns: 0, fs: 0 }, IDLE), null, 1);
    assert.equal(idle.pending, other.pending, 'idle: the shared pending');
    assert.equal(idle.tracer, other.tracer, 'idle: the shared tracer');
    assert.ok(Object.isFrozen(idle.pending) && Object.isFrozen(idle.tracer));
    assert.deepEqual({ ...idle.pending }, { dns: 0, fs: 0, crypto: 0, zlib: 0, other: 0 });

    const again = summarizePool(sample({ crypto: 4 }, { ...ARMED, armedSince: 2000 }), null, 1, idle);
    assert.equal(again.pending, ownPending, 'busy again: its own pending, reused');
    assert.equal(again.tracer, ownTracer, 'busy again: its own tracer, reused');
    assert.deepEqual({ ...again.pending }, { dns: 0, fs: 0, crypto: 4, zlib: 0, other: 0 });
    assert.equal(again.tracer.armedSince, 2000);
    // The shared ones are as they were.
    assert.deepEqual({ ...other.pending }, { dns: 0, fs: 0, crypto: 0, zlib: 0, other: 0 });
    assert.deepEqual({ ...other.tracer }, { mode: 'auto', armed: false, armedSince: null, jobs: [] });
  });
});

// A sample as the threadpool sampler gives it: its details' probes and busy-thread reading.
function threadpoolSample(busy, probes = { work: { maxWaitSeconds: 0.25, inFlightSeconds: 0 }, dns: { maxWaitSeconds: 0, inFlightSeconds: 0.5 } }) {
  return { time: 1000, points: [], details: { threadpool: { size: 4, dnsSlots: 2, probes, busy } } };
}

describe('findings/pool: an interval\'s pool figures', () => {
  it('gives back the probes\' waits and the busy-thread reading as they came, whether kept in cells or as an object', () => {
    const available = { available: true, threads: 4, computing: 0.123, runnable: null, schedulings: 153.25, meanWaitSeconds: 0.0000713 };
    const others = [
      null,
      { available: false, reason: 'first reading (CPU time per interval needs two)' },
      { available: false, reason: 'no libuv-worker thread yet', workers: 0 },
      { available: true, threads: 4, computing: 1, runnable: 0.5, schedulings: 2, meanWaitSeconds: 0.001, extra: 1 }, // another shape
      { threads: 4, available: true, computing: 1, runnable: 0.5, schedulings: 2, meanWaitSeconds: 0.001 }, // another order
    ];
    const cells = windowColumns(4);
    let pool = null;
    // One pool overwritten as a summary leaving the window is: each reading after any other.
    for (const busy of [available, ...others, available, others[1], available]) {
      pool = summarizePool(threadpoolSample(busy), null, 1, pool, cells, 14);
      assert.deepEqual(pool.busy === null ? null : { ...fields(pool.busy) }, busy === null ? null : { ...busy });
      // an available reading of the usual fields is in cells (a new view at each read), any other kept
      assert.equal(pool.busy === pool.busy, busy !== available, 'where it is kept');
      assert.equal(pool.work.wait, 0.25);
      assert.equal(pool.work.stuck, false);
      assert.equal(pool.dns.wait, 0.5);
      assert.equal(pool.dns.stuck, true);
      assert.equal(probeWait(pool, 'work'), 0.25);
      assert.equal(probeWait(pool, 'dns'), 0.5);
    }
    // Without a reading a wait is null.
    pool = summarizePool(threadpoolSample(available, {}), null, 1, pool, cells, 14);
    assert.equal(pool.work.wait, null);
    assert.equal(probeWait(pool, 'dns'), null);
    assert.equal(poolWait({ pool, seconds: 1, delayMax: 0 }), null);
  });

  it('keeps nothing of what its work, dns and busy readers made (a finding\'s text reads them over the whole window)', () => {
    const pool = summarizePool(threadpoolSample({ available: true, threads: 4, computing: 1, runnable: 2, schedulings: 3, meanWaitSeconds: 0.004 }), null, 1, null, windowColumns(1), 14);
    const keys = Object.keys(pool);
    for (let i = 0; i < 3; i++) assert.ok(pool.work.wait + pool.dns.wait + pool.busy.runnable > 0);
    assert.deepEqual(Object.keys(pool), keys);
  });

  it('the signals read the cells: poolWait and poolHeld beyond the loop\'s delay, cpuStarvedPool from the busy threads against the budget', () => {
    const busy = { available: true, threads: 4, computing: 1.5, runnable: 2, schedulings: 300, meanWaitSeconds: 0.004 };
    const eventloop = { mainThreadCpuSeconds: 0.4, mainThreadWaitSeconds: 0.1, processCpuSeconds: 1.9 };
    const interval = (budget, delayMax) => {
      const sample = threadpoolSample(busy);
      sample.details.eventloop = eventloop;
      sample.points = [{ name: 'process.cpu.budget', attributes: {}, value: budget }, { name: 'nodejs.eventloop.delay.max', attributes: {}, value: delayMax }];
      const s = summarizeInterval(sample, { time: 0, points: [] }, 0);
      deriveSignals(s, LIMITS);
      return s;
    };
    // the work probe waited 0.25 s: less the loop's delay, held from 50 ms
    for (const [delayMax, wait, held] of [[0, 0.25, true], [0.1, 0.15, true], [0.21, 0.04, false]]) {
      const s = interval(2, delayMax);
      assert.ok(Math.abs(poolWait(s) - wait) < 1e-12, `delay ${delayMax}: ${poolWait(s)}`);
      assert.equal(s.poolHeld, held);
    }
    // 2 threads waiting at 4 ms a wait: starved; the app's threads want 1.5 + 2 + (0.4 + 0.1) CPUs,
    // 2 over a budget of 2 (more than the 0.5 margin), none over a budget of 4
    assert.equal(interval(2, 0).poolThreadsStarved, true);
    assert.equal(interval(2, 0).cpuStarvedPool, true);
    assert.equal(interval(4, 0).poolThreadsStarved, true);
    assert.equal(interval(4, 0).cpuStarvedPool, false);
    // the main thread waited 0.1 s of 1: not the loop
    assert.equal(interval(2, 0).cpuStarvedLoop, false);
  });
});

// A reading's fields as a reader sees them (a view's are accessors on its prototype).
function fields(b) {
  const out = {};
  for (const k of ['available', 'reason', 'workers', 'threads', 'computing', 'runnable', 'schedulings', 'meanWaitSeconds', 'extra']) if (b[k] !== undefined || (k in b && b[k] === undefined && Object.prototype.hasOwnProperty.call(b, k))) out[k] = b[k];
  return out;
}
