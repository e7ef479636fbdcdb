'use strict';

// Whether a late loop was the app's block or a starved process, at the capture's start (auto,
// capture.js #consider). The loop's lateness less the main thread's wait for a CPU (the event-loop
// source's reading) leaves its time off the CPU: the app's blocking calls (execSync, a synchronous
// read, Atomics.wait), but also its waits for the process's own threads (libuv starting its pool,
// V8's compile and GC jobs), which on a starved core wait for the CPU themselves. The part of that
// time the other threads spent waiting for a CPU (their schedstat run_delay over the interval; not
// more than the main thread's time off the CPU and not queued, less what they ran meanwhile: that
// is the app's work) is not counted as blocked.
//
// The other threads are read (one /proc file each, ~90 us for 11 threads) only where it can
// matter: once at the start, at the end of an interval in which the main thread waited 2 % of the
// threshold or more for a CPU (the baseline of the next one) and at a candidate start. An idle or unloaded process reads nothing. Without a baseline from the
// interval's start (the first interval of a starvation, no schedstat, not Linux) the judgement is
// as before: lateness less the main thread's wait.

const fs = require('fs');

// The main thread's wait for a CPU in an interval from which the next one's baseline is read, as a
// share of the threshold (2 ms at 100 ms): a starved core's waits are 5 to 500 ms an interval
// (ten busy processes on its CPU, the app asleep between two samples: 6 ms), an idle process's
// wake-ups microseconds to a millisecond on a loaded host.
const LOADED_WAIT_SHARE = 0.02;
const TASKS = '/proc/self/task';
// One buffer for every read.
const BUF = Buffer.allocUnsafe(128);

/**
 * One reading of the other threads' schedstat: their tids, ns on a CPU and ns waiting for one, in
 * arrays the reading keeps and refills (OtherThreads recycles three): a Map of arrays a read lived
 * until the next interval's read, through the scavenges between (1.4 to 2.8 KB a sample kept under
 * CPU load, a heap-snapshot diff around one sample).
 */
class Reading {
  n = 0;
  tids = new Int32Array(32);
  ran = new Float64Array(32);
  wait = new Float64Array(32);

  /** @param {number} tid @param {number} ran @param {number} wait */
  push(tid, ran, wait) {
    if (this.n === this.tids.length) {
      const grow = (/** @type {any} */ a) => {
        const b = new a.constructor(a.length * 2);
        b.set(a);
        return b;
      };
      this.tids = grow(this.tids);
      this.ran = grow(this.ran);
      this.wait = grow(this.wait);
    }
    this.tids[this.n] = tid;
    this.ran[this.n] = ran;
    this.wait[this.n] = wait;
    this.n++;
  }

  /**
   * The place of tid, looked for first at `hint` (threads come in the same order read to read).
   * @param {number} tid @param {number} hint
   * @returns {number} -1 if absent
   */
  indexOf(tid, hint) {
    if (hint < this.n && this.tids[hint] === tid) return hint;
    for (let i = 0; i < this.n; i++) if (this.tids[i] === tid) return i;
    return -1;
  }
}

/**
 * The process's other threads' schedstat now, into `into` (emptied first), or null.
 * @param {string} self the main thread's tid
 * @param {Reading} [into]
 * @returns {Reading | null}
 */
function readOthers(self, into = new Reading()) {
  const { _internal: { fieldAt } } = require('../schedstat');
  let tids;
  try {
    tids = fs.readdirSync(TASKS);
  } catch {
    return null;
  }
  into.n = 0;
  for (let i = 0; i < tids.length; i++) {
    const tid = tids[i];
    if (tid === self) continue;
    let fd = null;
    try {
      fd = fs.openSync(`${TASKS}/${tid}/schedstat`, 'r');
      const n = fs.readSync(fd, BUF, 0, BUF.length, 0);
      into.push(Number(tid), fieldAt(BUF, n, 0), fieldAt(BUF, n, 1));
    } catch {
      // a thread that ended meanwhile
    } finally {
      if (fd !== null) fs.closeSync(fd);
    }
  }
  return into;
}

/**
 * Seconds of an interval's loop delay that count as the app's block: what it blocked at least
 * (the event-loop source's figure: lateness less the main thread's wait for a CPU) less the other
 * threads' wait for a CPU, at most that figure's part the main thread neither ran nor shared with
 * the other threads' running (their CPU time is the app's work).
 * @param {import('../index').LoopReading} loop the event-loop source's reading
 * @param {{ ranSeconds: number, waitSeconds: number } | null} others the other threads' CPU time
 *   and wait for a CPU over the same interval, or null where not known
 * @returns {number}
 */
function blockedSeconds(loop, others) {
  const blocked = typeof loop.blockedOnCpuMaxSeconds === 'number' ? loop.blockedOnCpuMaxSeconds : loop.lateSeconds;
  if (!others || loop.mainThreadCpuSeconds === null) return blocked;
  const offCpu = Math.max(0, blocked - loop.mainThreadCpuSeconds - others.ranSeconds);
  return Math.max(0, blocked - Math.min(others.waitSeconds, offCpu));
}

class OtherThreads {
  /** @type {Reading | null} the baseline: the end of the last interval, where read */
  #base = null;
  /** @type {Reading | null} ...and of the one before (a lateness longer than its interval) */
  #before = null;
  // The readings refilled in turn: at most two are held (#base and #before) when a third is read.
  #readings = [new Reading(), new Reading(), new Reading()];
  #self;

  constructor() {
    try {
      this.#self = fs.readlinkSync('/proc/thread-self').split('/').pop() || '';
    } catch {
      this.#self = ''; // no /proc: readOthers() finds nothing either
    }
    // The first interval's baseline (once): a process starved from its start is judged from it.
    this.#base = readOthers(this.#self, this.#readings[0]);
  }

  /**
   * At each sample while the capture is off: the interval's figure to judge its start by (the
   * loop reading's blocked seconds, the other threads counted where a baseline was read), and
   * the next interval's baseline where the main thread waited for a CPU.
   * @param {import('../index').LoopReading} loop
   * @param {number} thresholdSeconds
   * @returns {number}
   */
  blocked(loop, thresholdSeconds) {
    const base = loop.lateSeconds > loop.spanSeconds ? this.#before : this.#base;
    this.#before = this.#base;
    this.#base = null;
    const plain = blockedSeconds(loop, null);
    const loaded = (loop.mainThreadWaitSeconds || 0) >= LOADED_WAIT_SHARE * thresholdSeconds;
    if (!(plain >= thresholdSeconds && base) && !loaded) return plain;
    // A reading neither the baseline judged against nor the one kept as #before.
    const spare = this.#readings.find((r) => r !== base && r !== this.#before) || new Reading();
    const now = readOthers(this.#self, spare);
    if (loaded) this.#base = now;
    if (!(plain >= thresholdSeconds && base && now)) return plain;
    let ran = 0;
    let waited = 0;
    for (let i = 0; i < now.n; i++) {
      // A thread new in the interval: all of its figures are the interval's.
      const at = base.indexOf(now.tids[i], i);
      ran += now.ran[i] - (at >= 0 ? base.ran[at] : 0);
      waited += now.wait[i] - (at >= 0 ? base.wait[at] : 0);
    }
    return blockedSeconds(loop, { ranSeconds: Math.max(0, ran) / 1e9, waitSeconds: Math.max(0, waited) / 1e9 });
  }

  /** The capture started: blocked() is not called while it runs, so its baselines would be stale. */
  forget() {
    this.#base = null;
    this.#before = null;
  }
}

module.exports = { OtherThreads, blockedSeconds, _internal: { readOthers } };
