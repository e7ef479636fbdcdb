'use strict';

const fs = require('fs');
const { round } = require('../../core/format');
const { closeKept } = require('../kept-fd');

// libuv 1.50+ (Node 22+) names its pool threads (src/threadpool.c: uv_thread_setname).
const WORKER_NAME = 'libuv-worker';
// USER_HZ: clock ticks in /proc/<pid>/stat are 1/100 s on every Linux architecture Node runs on
// (the kernel's ABI constant, independent of CONFIG_HZ). Used only where schedstat is missing.
const USER_HZ = 100;
const TASKS = '/proc/self/task';

// A /proc file is read into this one buffer. fs.readFileSync(path, 'latin1') of a file whose size
// stat gives as 0 (every /proc file) reads in 64 KiB buffers, two a call (the second reads 0
// bytes), each malloc'd outside V8's heap and freed only when a GC collects it: with a read per
// pool thread per sample, at a 100 ms interval that is megabytes a second of malloc between two
// scavenges, and the C heap keeps the high-water mark resident (RSS) after they are freed.
const READ_BUFFER = Buffer.allocUnsafe(4096);

/**
 * A small file's text (latin1), read into READ_BUFFER; a file that fills it is read again whole.
 * @param {string} file
 */
function readSmall(file) {
  const fd = fs.openSync(file, 'r');
  let n = 0;
  try {
    for (let got = -1; got !== 0 && n < READ_BUFFER.length;) {
      got = fs.readSync(fd, READ_BUFFER, n, READ_BUFFER.length - n, null);
      n += got;
    }
  } finally {
    fs.closeSync(fd);
  }
  return n < READ_BUFFER.length ? READ_BUFFER.toString('latin1', 0, n) : fs.readFileSync(file, 'latin1');
}

/**
 * @typedef {{ available: true, threads: number, computing: number, runnable: number|null, schedulings: number|null, meanWaitSeconds: number|null }
 *   | { available: false, reason: string, workers?: 0 }} PoolThreadsReading
 *   runnable, schedulings and meanWaitSeconds are null where schedstat is missing; workers: 0
 *   where threads are named (libuv 1.50+) and none exists yet (the pool has not started)
 */

/**
 * Busy pool threads from the kernel's per-thread accounting, without any hook: the threads named
 * `libuv-worker` in /proc/self/task/<tid>/comm, and per interval their time on a CPU (computing)
 * and their time ready to run but waiting for a CPU (runnable), from
 * /proc/self/task/<tid>/schedstat (nanoseconds; falls back to utime+stime in /stat, without
 * runnable). Divided by the interval, each is a mean number of threads.
 *
 * A thread blocked in a system call (getaddrinfo waiting for a DNS answer, a read from a slow
 * disk) is neither computing nor runnable: it is not counted as busy here.
 *
 * runnable is the kernel's run_delay: every wait on a run queue, whatever its cause. A thread
 * preempted or woken behind another one waits for about a scheduler slice (milliseconds); every
 * wake-up also waits its own latency (microseconds: the switch, on a VM the wake-up of an idle
 * vCPU), even with a CPU free, and so does a thread woken for a job another thread took. The
 * kernel does not split run_delay by cause, so these cannot be told apart per interval; with
 * tens of thousands of wake-ups a second (very short jobs) the wake-ups alone add tenths of a
 * thread. schedulings (arrivals on a CPU per second, schedstat's third field) and
 * meanWaitSeconds (run_delay per arrival) are given so a reader can see which kind of wait it
 * was: microseconds per arrival is wake-ups, not threads short of a CPU.
 */
class PoolThreads {
  #root;
  #hrtime;
  #names = new Map(); // tid -> is a pool worker (a thread's name is read once)
  /** @type {{ at: bigint, cpu: Map<string, ThreadTimes> }|null} */
  #previous = null;
  // The Map the next reading fills: the one of the reading before the previous, its entries
  // rewritten in place. A new Map and an object per thread at each reading lived until the next
  // one and survived V8's scavenges in between (~600 bytes a sample with four threads).
  /** @type {Map<string, ThreadTimes>} */
  #spare = new Map();
  // Which reading an entry of #spare was last written by: those of an earlier one are dropped.
  #readings = 0;
  /** @type {string|null} */
  #unavailable = null;
  // The pool's threads once found in /proc/self/task: libuv starts them all at once, each naming
  // itself before uv_threadpool's init returns (src/threadpool.c: worker() names the thread, then
  // posts the semaphore init_threads waits on), and none ends before the process, so later
  // readings read these and list the directory again only when one is gone.
  /** @type {string[]|null} */
  #workers = null;
  // Before the pool starts, the directory is listed again only when its link count moved: a
  // directory's count is 2 plus its subdirectories, a thread each in /proc/<pid>/task (fs/proc/
  // base.c proc_task_getattr), read by an fstat of a kept descriptor (~10 us a sample where a
  // readdir costs ~120). -1: list at every reading (no count, or a filesystem without one).
  #dirFd = null;
  #links = -1;

  /**
   * @param {object} [options]
   * @param {string} [options.root] the task directory (tests)
   * @param {() => bigint} [options.hrtime] monotonic clock in ns (tests)
   */
  constructor(options = {}) {
    this.#root = options.root || TASKS;
    this.#hrtime = options.hrtime || process.hrtime.bigint;
    if (process.platform !== 'linux') this.#unavailable = `/proc is Linux-only (platform ${process.platform})`;
    // libuv before 1.50 never names a pool thread: no reading can find one, so none lists
    // /proc/self/task (a readdir per sample, most of what this costs an idle Node 20). A test's
    // task directory is read whatever the libuv.
    else if (!options.root && !namesWorkers()) this.#unavailable = UNNAMED;
  }

  /**
   * Busy threads as mean numbers of threads since the last call (the first gives none).
   * @returns {PoolThreadsReading}
   */
  read() {
    if (this.#unavailable) return { available: false, reason: this.#unavailable };
    let found = this.#workers ? this.#knownWorkerTimes(this.#workers) : null;
    if (!found) {
      const links = this.#linkCount();
      if (links !== -1 && links === this.#links) return this.#noWorkers(this.#hrtime());
      let tids;
      try {
        tids = fs.readdirSync(this.#root);
      } catch (err) {
        this.#unavailable = `${this.#root} cannot be read (${err.code || err.message})`;
        this.close();
        return { available: false, reason: this.#unavailable };
      }
      found = this.#workerTimes(tids);
      // Only the process's own pool is known to start at once (a test's directory may not).
      this.#workers = found.cpu.size > 0 && this.#root === TASKS ? [...found.cpu.keys()] : null;
      // Counted before the listing: a thread started between the two is listed at the next reading.
      if (found.cpu.size === 0) this.#links = links;
      else this.close();
    }
    const at = this.#hrtime();
    const { cpu, hasWait } = found;
    if (cpu.size === 0) return this.#noWorkers(at);
    const previous = this.#previous;
    if (!previous || previous.cpu.size === 0) {
      this.#previous = { at, cpu };
      this.#spare = new Map();
      return { available: false, reason: 'first reading (CPU time per interval needs two)' };
    }
    const { computing, runnable, slices, meanWait } = rates(previous, at, cpu);
    this.#spare = previous.cpu;
    previous.cpu = cpu;
    previous.at = at;
    return {
      available: true, threads: cpu.size, computing: round(computing, 3), runnable: hasWait ? round(runnable, 3) : null,
      schedulings: hasWait ? Math.round(slices) : null, meanWaitSeconds: hasWait ? round(meanWait, 9) : null,
    };
  }

  /** Closes the task directory's descriptor (kept while no worker is found). */
  close() {
    this.#dirFd = closeKept(this.#dirFd);
    this.#links = -1;
  }

  /**
   * No worker found: the pool starts with its first job; before that no worker exists yet, named or not.
   * @param {bigint} at
   * @returns {PoolThreadsReading}
   */
  #noWorkers(at) {
    if (this.#previous === null || this.#previous.cpu.size > 0) this.#previous = { at, cpu: new Map() };
    else this.#previous.at = at;
    if (!namesWorkers()) return { available: false, reason: UNNAMED };
    return NO_WORKERS;
  }

  // The task directory's link count now (-1 where it cannot be read or is not kept by the filesystem).
  #linkCount() {
    try {
      if (this.#dirFd === null) this.#dirFd = fs.openSync(this.#root, 'r');
      const n = fs.fstatSync(this.#dirFd).nlink;
      return n > 1 ? n : -1;
    } catch {
      this.#dirFd = closeKept(this.#dirFd);
      return -1;
    }
  }

  // CPU times of the pool's threads now, and whether every one has schedstat (a runnable time).
  #workerTimes(tids) {
    const cpu = this.#spare;
    const reading = ++this.#readings;
    let hasWait = true;
    // Index loops (here and below): every sample, no iterator result per thread.
    for (let i = 0; i < tids.length; i++) {
      const tid = tids[i];
      if (!this.#isWorker(tid)) continue;
      const t = this.#times(tid, cpu.get(tid));
      if (!t) continue;
      t.reading = reading;
      hasWait = hasWait && t.hasWait;
      cpu.set(tid, t);
    }
    dropOlder(cpu, reading);
    if (this.#names.size > tids.length * 2) for (const tid of this.#names.keys()) if (!tids.includes(tid)) this.#names.delete(tid);
    return { cpu, hasWait };
  }

  // The known workers' CPU times, or null when one is gone (then the directory is listed again).
  #knownWorkerTimes(tids) {
    const cpu = this.#spare;
    const reading = ++this.#readings;
    let hasWait = true;
    for (let i = 0; i < tids.length; i++) {
      const tid = tids[i];
      const t = this.#times(tid, cpu.get(tid));
      if (!t) return null;
      t.reading = reading;
      hasWait = hasWait && t.hasWait;
      cpu.set(tid, t);
    }
    dropOlder(cpu, reading);
    return { cpu, hasWait };
  }

  #isWorker(tid) {
    let w = this.#names.get(tid);
    if (w === undefined) {
      try {
        w = readSmall(`${this.#root}/${tid}/comm`).trim() === WORKER_NAME;
      } catch {
        return false; // thread gone
      }
      this.#names.set(tid, w);
    }
    return w;
  }

  /**
   * A thread's CPU times now, written into `into` (an entry of the spare Map) when given.
   * @param {string} tid
   * @param {ThreadTimes} [into]
   * @returns {ThreadTimes|null}
   */
  #times(tid, into) {
    const t = into || { run: 0, wait: 0, slices: 0, hasWait: true, reading: 0 };
    try {
      const [run, wait, slices] = readSmall(`${this.#root}/${tid}/schedstat`).trim().split(' ');
      t.run = Number(run) / 1e9;
      t.wait = Number(wait) / 1e9;
      t.slices = Number(slices);
      t.hasWait = true;
      return t;
    } catch {
      try {
        const stat = readSmall(`${this.#root}/${tid}/stat`);
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        // fields[0] is the state (3rd field); utime and stime are fields 14 and 15.
        t.run = (Number(fields[11]) + Number(fields[12])) / USER_HZ;
        t.wait = 0;
        t.slices = 0;
        t.hasWait = false;
        return t;
      } catch {
        return null;
      }
    }
  }
}

/**
 * A pool thread's CPU times at a reading (seconds on a CPU, seconds runnable, arrivals on a CPU).
 * @typedef {{ run: number, wait: number, slices: number, hasWait: boolean, reading: number }} ThreadTimes
 */

// Drops the entries a reading before `reading` wrote (threads gone since).
function dropOlder(cpu, reading) {
  if (cpu.size === 0) return;
  cpu.forEach((t, tid) => {
    if (t.reading !== reading) cpu.delete(tid);
  });
}

/** @type {boolean | undefined} */
let named;

/** Whether this libuv names its pool threads (1.50+); read at every sample before the pool starts. */
function namesWorkers() {
  if (named === undefined) {
    const [major, minor] = process.versions.uv.split('.').map(Number);
    named = major > 1 || minor >= 50;
  }
  return named;
}

/** @type {PoolThreadsReading} */
const NO_WORKERS = Object.freeze({ available: false, reason: 'no libuv-worker thread yet (the pool starts with its first job)', workers: 0 });

const UNNAMED = `libuv ${process.versions.uv} (Node ${process.versions.node.split('.')[0]}) does not name its pool threads (libuv 1.50+, Node 22+ does)`;

// Per second since the previous reading: time computing, time runnable and arrivals on a CPU of
// the threads seen both times, and the mean wait per arrival.
function rates(previous, at, cpu) {
  const seconds = Number(at - previous.at) / 1e9;
  let computing = 0;
  let runnable = 0;
  let slices = 0;
  for (const [tid, t] of cpu) {
    const before = previous.cpu.get(tid);
    if (!before) continue;
    computing += Math.max(0, t.run - before.run);
    runnable += Math.max(0, t.wait - before.wait);
    slices += Math.max(0, t.slices - before.slices);
  }
  // Mean wait per arrival on a CPU, before dividing by the interval.
  const meanWait = slices > 0 ? runnable / slices : 0;
  if (seconds <= 0) return { computing: 0, runnable: 0, slices: 0, meanWait };
  return { computing: computing / seconds, runnable: runnable / seconds, slices: slices / seconds, meanWait };
}

/**
 * Busy pool threads (see PoolThreads).
 * @param {ConstructorParameters<typeof PoolThreads>[0]} [options]
 * @returns {PoolThreads}
 */
function createPoolThreads(options) {
  return new PoolThreads(options);
}

module.exports = { createPoolThreads, WORKER_NAME };
