'use strict';

// The threadpool figures the rules read. Two probes launched together after each sample tell who
// holds the pool (lib/sources/threadpool/sampler.js): the work probe (an fs.access of '/')
// waits only when no thread is free at all; the dns probe (getnameinfo of 127.0.0.1) also waits
// for one of the (size+1)/2 DNS slots. DNS work can hold at most the DNS slots, so a work probe
// that waits means the rest of the pool is held by other work, and then lookups wait behind that
// work, not behind each other.

const { findPoint } = require('../snapshot/snapshot');
const { Columns, defineColumns } = require('../core/columns');
const { waitBeyondLoop } = require('../core/pool-held');

// The pool's figures of an interval (summarizePool()). The window holds one per interval (600 at
// a 100 ms interval, for 60 s): its numbers are in cells of the window's columns
// (lib/core/columns.js: the summary's row), the probes' and the busy threads' too, so that
// an interval keeps one object here, not four (the pool's, a probe's twice, a copy of the
// busy-thread reading with its doubles as heap numbers: ~200 bytes an interval). `work`, `dns`
// and `busy` read as before, as a new object at each read, kept by nothing here (what a finding's
// text reads once it fired); the signals and found/ code read the cells (poolWait(), probeWait(),
// busyNow()).
//
// Cells from `at`: the work probe's wait, the dns probe's, whether each was stuck (0 or 1), the
// work probe's wait while the loop was idle (HELD: null where the sampler does not give it), then
// the busy threads' BUSY_FIGURES.
const WORK = 0;
const DNS = 1;
const STUCK = 2;
const HELD = 4;
const BUSY_AT = 5;
// A busy-thread reading where the threads could be read (pool-threads.js), after `available`,
// in the reading's order: kept in cells when it has exactly these fields.
const BUSY_FIGURES = ['threads', 'computing', 'runnable', 'schedulings', 'meanWaitSeconds'];
const POOL_CELLS = BUSY_AT + BUSY_FIGURES.length;

class PoolFigures {
  /**
   * @param {Columns} cells
   * @param {number} at the first of its POOL_CELLS cells
   */
  constructor(cells, at) {
    this.cells = cells;
    this.at = at;
    /** @type {number|undefined} */
    this.size = undefined;
    /** @type {number|undefined} */
    this.slots = undefined;
    /** @type {any} */
    this.pending = null;
    /** @type {any} */
    this.tracer = null;
    // The summary's own pending and tracer parts (pending and tracer point at these or at the shared
    // idle ones), made the first time its figures differ.
    /** @type {any} */
    this.ownPending = null;
    /** @type {any} */
    this.ownTracer = null;
    // The busy-thread reading: null, IN_CELLS (an available reading, its figures in the cells) or
    // a copy of any other reading (keptBusy()).
    /** @type {any} */
    this.busyKept = null;
  }

  /** The work probe's figures: { wait, stuck }. */
  get work() {
    return new ProbeFigures(this.cells, this.at + WORK, this.at + STUCK + WORK);
  }

  /** The dns probe's figures: { wait, stuck }. */
  get dns() {
    return new ProbeFigures(this.cells, this.at + DNS, this.at + STUCK + DNS);
  }

  /** The busy-thread reading as details.threadpool.busy gave it (its fields), or null. */
  get busy() {
    const kept = this.busyKept;
    return kept === IN_CELLS ? new BusyFigures(this.cells, this.at + BUSY_AT) : kept;
  }
}

const IN_CELLS = Object.freeze({ inCells: true });

// A probe's figures: wait (seconds, or null without a reading) and stuck (a probe still in flight
// at the sample), in the pool's cells.
class ProbeFigures {
  /**
   * @param {Columns} cells
   * @param {number} at the cell of wait
   * @param {number} stuckAt the cell of stuck
   */
  constructor(cells, at, stuckAt) {
    this.cells = cells;
    this.at = at;
    this.stuckAt = stuckAt;
  }

  get stuck() {
    return this.cells.get(this.stuckAt) === 1;
  }

  set stuck(v) {
    this.cells.set(this.stuckAt, v ? 1 : 0);
  }
}
defineColumns(ProbeFigures.prototype, ['wait']);

// An available busy-thread reading kept in cells: `available` true, BUSY_FIGURES.
class BusyFigures {
  /**
   * @param {Columns} cells
   * @param {number} at the cell of threads
   */
  constructor(cells, at) {
    this.cells = cells;
    this.at = at;
  }

  get available() {
    return true;
  }
}
defineColumns(BusyFigures.prototype, BUSY_FIGURES);

// The signals' reading of a summary's busy threads, one for every call (it reads and returns
// booleans): the pool's cells without an object each.
const busyScratch = new BusyFigures(new Columns(1, BUSY_FIGURES.length), 0);

/**
 * The busy-thread reading of a summary's pool, for reading at once (the one scratch object where
 * it is in cells).
 * @param {PoolFigures} pool
 */
function busyNow(pool) {
  if (pool.busyKept !== IN_CELLS) return pool.busyKept;
  busyScratch.cells = pool.cells;
  busyScratch.at = pool.at + BUSY_AT;
  return busyScratch;
}

/**
 * The threadpool figures of one interval that the findings need, from the snapshot's points and,
 * when the threadpool sampler gives them, its details (probe waits, busy threads, the tracer).
 * Waits are in seconds; a wait is null when the probe gave no reading in the interval.
 * @param {{ points: readonly object[], details: object }} sample
 * @param {{ points: readonly object[] }|null} previous
 * @param {number} seconds length of the interval
 * @param {object|null} [into] the figures of a summary that left the window, overwritten (with
 *   their pending, probe and tracer parts) rather than new ones made
 * @param {Columns} [cells] the window's columns, where the pool's numbers are kept (a pool without
 *   them has columns of its own)
 * @param {number} [at] the first of the POOL_CELLS cells of this summary's row
 */
function summarizePool(sample, previous, seconds, into = null, cells = undefined, at = 0) {
  const details = (sample.details && sample.details.threadpool) || {};
  const value = (name, attrs = {}) => {
    const p = findPoint(sample.points, name, attrs);
    return p ? p.value : undefined;
  };
  const probe = (queue, out, i) => {
    const fromDetails = details.probes && details.probes[queue];
    if (fromDetails) {
      if (i === WORK) out.cells.set(out.at + HELD, typeof fromDetails.heldSeconds === 'number' ? fromDetails.heldSeconds : null);
      const waits = [fromDetails.maxWaitSeconds, fromDetails.inFlightSeconds].filter((w) => typeof w === 'number' && w > 0);
      return probeFigures(out, i, waits.length ? Math.max(...waits) : (fromDetails.maxWaitSeconds === 0 ? 0 : null), fromDetails.inFlightSeconds > 0);
    }
    // Without details: the mean of the probes completed in the interval, or, for a probe still in
    // flight at sampling time, at least the interval (it was launched right after the last sample).
    if (i === WORK) out.cells.set(out.at + HELD, null);
    const attrs = { 'nodejs.uv.threadpool.queue': queue };
    const now = findPoint(sample.points, 'nodejs.uv.threadpool.queue_wait', attrs);
    if (!now) return probeFigures(out, i, null, false);
    const before = previous && findPoint(previous.points, 'nodejs.uv.threadpool.queue_wait', attrs);
    const count = now.histogram.count - (before ? before.histogram.count : 0);
    const sum = now.histogram.sum - (before ? before.histogram.sum : 0);
    const stuck = (value('uvscope.probe.in_flight', attrs) || 0) > 0;
    const waits = [];
    if (count > 0) waits.push(sum / count);
    if (stuck) waits.push(seconds);
    return probeFigures(out, i, waits.length ? Math.max(...waits) : null, stuck);
  };
  const pending = (kind) => value('nodejs.uv.threadpool.pending', { 'nodejs.uv.threadpool.kind': kind });
  const probeIn = (queue) => value('uvscope.probe.in_flight', { 'nodejs.uv.threadpool.queue': queue }) || 0;
  const tracer = details.tracer || null;
  let pool = into;
  if (!pool) {
    const own = cells || new Columns(1, POOL_CELLS);
    pool = new PoolFigures(own, cells ? at : own.row());
  }
  pool.size = details.size || value('nodejs.uv.threadpool.size');
  pool.slots = details.dnsSlots || value('nodejs.uv.threadpool.dns_slots');
  // the app's own work: the agent's probes are taken out
  const dns = Math.max(0, (pending('dns') || 0) - probeIn('dns'));
  const fs = pending('fs') || 0;
  const crypto = pending('crypto') || 0; // the tracer does not count the agent's own probes
  const zlib = pending('zlib') || 0;
  const other = pending('other') || 0;
  if (dns === 0 && fs === 0 && crypto === 0 && zlib === 0 && other === 0) {
    pool.pending = NO_PENDING;
  } else {
    const p = pool.ownPending || (pool.ownPending = { dns: 0, fs: 0, crypto: 0, zlib: 0, other: 0 });
    p.dns = dns;
    p.fs = fs;
    p.crypto = crypto;
    p.zlib = zlib;
    p.other = other;
    pool.pending = p;
  }
  probe('work', pool, WORK);
  probe('dns', pool, DNS);
  keepBusy(pool, details.busy);
  if (tracer) {
    const armed = Boolean(tracer.armed);
    const armedSince = tracer.armedSince || null;
    const jobs = Array.isArray(tracer.jobs) ? (tracer.jobs.length ? tracer.jobs : NO_JOBS) : NO_JOBS;
    const idle = !armed && armedSince === null && jobs === NO_JOBS ? IDLE_TRACER.get(tracer.mode) : undefined;
    if (idle) {
      pool.tracer = idle;
    } else {
      const t = pool.ownTracer || (pool.ownTracer = { mode: undefined, armed: false, armedSince: null, jobs: NO_JOBS });
      t.mode = tracer.mode;
      t.armed = armed;
      t.armedSince = armedSince;
      t.jobs = jobs;
      pool.tracer = t;
    }
  } else {
    pool.tracer = null;
  }
  return pool;
}

const NO_JOBS = Object.freeze([]);
// The figures of most intervals, one object each for every summary that has them (the window
// holds 600 summaries at 100 ms; an object each was ~120 bytes a summary kept for 60 s): no
// pool work pending, and a tracer not armed that saw no job, by its mode. pending and tracer
// point at one of these or at the summary's own (ownPending, ownTracer: made the first time its
// figures differ, and kept with the summary as it is reused), and only its own are written.
const NO_PENDING = Object.freeze({ dns: 0, fs: 0, crypto: 0, zlib: 0, other: 0 });
/** @type {Map<string, Readonly<{ mode: string, armed: boolean, armedSince: null, jobs: readonly object[] }>>} */
const IDLE_TRACER = new Map(['auto', 'on', 'off'].map((mode) => [mode, Object.freeze({ mode, armed: false, armedSince: null, jobs: NO_JOBS })]));

// The busy-thread reading (details.threadpool.busy, a new object each sample) kept in the pool:
// an available reading with exactly `available` and BUSY_FIGURES in the pool's cells, any other
// copied (keptBusy()); the summary keeps it for 60 s, and the sampler's own would all survive
// scavenges.
function keepBusy(pool, busy) {
  if (!busy) {
    pool.busyKept = null;
    return;
  }
  if (busy.available === true && hasBusyFields(busy)) {
    const cells = pool.cells;
    const at = pool.at + BUSY_AT;
    for (let i = 0; i < BUSY_FIGURES.length; i++) cells.set(at + i, busy[BUSY_FIGURES[i]]);
    pool.busyKept = IN_CELLS;
    return;
  }
  pool.busyKept = keptBusy(busy, pool.busyKept === IN_CELLS ? null : pool.busyKept);
}

// Whether a reading's own enumerable fields are `available` and BUSY_FIGURES, in that order.
function hasBusyFields(busy) {
  let i = -1;
  for (const k in busy) {
    if (!Object.prototype.hasOwnProperty.call(busy, k)) return false;
    if (i === -1 ? k !== 'available' : k !== BUSY_FIGURES[i]) return false;
    i++;
  }
  return i === BUSY_FIGURES.length;
}

// A reading kept as an object: copied into the one of a summary that left the window when both
// have the same fields in the same order, else into a new object.
function keptBusy(busy, kept) {
  if (typeof busy !== 'object') return busy;
  let out = kept;
  if (out) {
    const a = Object.keys(busy);
    const b = Object.keys(out);
    if (a.length !== b.length) out = null;
    for (let i = 0; out !== null && i < a.length; i++) if (a[i] !== b[i]) out = null;
  }
  // A new one a clone of the reading (its ~6 fields inside the object: assigned one by one to a
  // `{}`, all but 4 went to a separate property array, ~40 bytes more per summary).
  if (!out) return { ...busy };
  for (const k in busy) out[k] = busy[k];
  return out;
}

// A probe's wait and stuck, written into the pool's cells (i: WORK or DNS).
function probeFigures(pool, i, wait, stuck) {
  pool.cells.set(pool.at + i, wait);
  pool.cells.set(pool.at + STUCK + i, stuck ? 1 : 0);
  return pool;
}

/**
 * How long a job waited for any free thread in this interval, beyond what the event loop's own
 * delay explains (a blocked loop runs every callback late: lib/core/pool-held.js, the test the
 * sampler arms its tracer on), or null without a reading.
 * @param {{ pool: ReturnType<typeof summarizePool>, delayMax?: number, seconds: number }} s
 */
function poolWait(s) {
  const pool = s.pool;
  if (!pool) return null;
  const held = pool.cells.get(pool.at + HELD);
  return waitBeyondLoop({
    wait: probeWait(pool, 'work'),
    idle: typeof held === 'number' ? held : null,
    stuck: pool.cells.get(pool.at + STUCK + WORK) === 1,
    loopDelay: s.delayMax || 0,
    seconds: s.seconds,
  });
}

/**
 * A probe's wait in an interval (seconds, or null without a reading), from the pool's cells (no
 * object made).
 * @param {PoolFigures} pool an interval summary's pool
 * @param {'work'|'dns'} which
 * @returns {number|null}
 */
function probeWait(pool, which) {
  return /** @type {number|null} */ (pool.cells.get(pool.at + (which === 'work' ? WORK : DNS)));
}

/**
 * The longest run of consecutive intervals in which no pool thread was free (the signal
 * poolHeld). A run of poolSaturatedIntervals is a pool held by work (threadpool-saturated); a
 * shorter one is a host short of CPU for a moment, which delays the probe's thread now and then.
 * @param {readonly { poolHeld: boolean }[]} window interval summaries, oldest first
 * @returns {number}
 */
function poolHeldRun(window) {
  let best = 0;
  let run = 0;
  for (let i = 0; i < window.length; i++) {
    run = window[i].poolHeld ? run + 1 : 0;
    if (run > best) best = run;
  }
  return best;
}

module.exports = { POOL_CELLS, summarizePool, poolWait, probeWait, busyNow, poolHeldRun };
