'use strict';

// The watchdog: runs in a worker thread (blockers/capture.js starts it, unref'd). Nothing runs on
// the main thread while the loop is healthy and no inspector session is attached. Every pollMs
// (x4 while the main thread is quiet) it reads the kernel's account of the main thread:
// /proc/self/task/<tid>/schedstat (time on a CPU and waiting for one), and when that was most
// of the window, .../status (its state, its voluntary switches). A window is blocked when the
// main thread is running or runnable and did not sleep in it (a loop with nothing to do sleeps in
// its poll). After armMs of that it connects a session (connectToMainThread), starts V8's CPU
// profiler (answered by an interrupt of the running JavaScript) and probes the main thread (what
// it serves, libuv's loop count); past thresholdMs it probes again: a loop that went round in
// between (a chain of short immediates never sleeps) is no block. When the main thread sleeps
// again it stops the profiler, disconnects, cuts the profile at the block's end and posts the
// block with its blockers (summary.js). A block counts when its main-thread CPU time reached
// thresholdMs (a short callback stretched by a host that gave it no CPU is not a blocker).

const fs = require('fs');
const { parentPort, workerData } = require('worker_threads');
const { Session } = require('inspector');
const { summarize } = require('./summary');

const { statPath, thresholdMs, pollMs, armMs, intervalUs, root } = workerData;
// While the main thread is quiet (awake under QUIET of the last window) the watchdog polls this
// much less often: each wake-up of a thread costs ~0.1 ms of CPU on a busy 2-CPU VM, and an idle
// agent may spend ~1.7 ms a second in all (lib/core/cpu-budget.js's target, 100 ms a minute).
const QUIET = 0.1;
const QUIET_FACTOR = 4;
// Commands the main thread does not answer within this long are given up (Node 24+ reads an idle
// main thread's session only when JavaScript runs: a poke message wakes it, see post()).
const ANSWER_MS = 2000;

const session = new Session();
let fd = -1;
let schedFd = -1;
let blockedRunNs = 0;
const buf = Buffer.alloc(4096);
let lastAt = 0n;
let lastRun = 0;
let lastAwake = 0;
// The main thread's voluntary switches at the last poll that read them, -1 when it did not.
let lastSleeps = -1;
let connected = false;
// Where the main thread's activity began, when a poll first saw it (back-dated by the time it was
// awake in that window): a block that began in a quiet window is timed from there.
let entryAt = 0n;
let entryRun = 0;
// From a block's end until its capture is stopped and reported: no new capture, no check.
let stopping = false;
// The current block: since when the main thread has not slept (hrtime ns), whether the profiler runs.
let blockedSince = 0n;
let capturing = false;
let route = null;
let loops = -1;
let confirmed = false;
/** @type {Promise<void> | null} the capture's start (profiler, probe), then its check */
let pending = null;
let checking = false;
let profiling = false;
let probedAt = 0n;
// Starting the profiler parks the main thread while V8 starts its sampling thread (a voluntary
// switch): until the start is answered, and in the window after, switches do not end the block.
let starting = false;
let startedPoll = false;
let closed = false;
const STATE = /^State:\s+(\S)/m;
const VOLUNTARY = /^voluntary_ctxt_switches:\s+(\d+)/m;
const EVALUATE = 'globalThis[Symbol.for("uvscope.blockers.probe")]?.()';

/** The main thread's state (R running or runnable, S sleeping...) and its voluntary switches so far. */
function readStatus() {
  const n = fs.readSync(fd, buf, 0, buf.length, 0);
  const s = buf.toString('latin1', 0, n);
  const state = STATE.exec(s);
  const sleeps = VOLUNTARY.exec(s);
  return state && sleeps ? { running: state[1] === 'R', sleeps: Number(sleeps[1]) } : null;
}

/**
 * The main thread's time so far (ns) on a CPU (schedstat's first field) and waiting for one (its
 * second), into `times`; false when unreadable.
 */
function readTimes(times) {
  const n = fs.readSync(schedFd, buf, 0, 96, 0);
  const s = buf.toString('latin1', 0, n);
  const a = s.indexOf(' ');
  const b = s.indexOf(' ', a + 1);
  times.run = Number(s.slice(0, a));
  times.wait = Number(s.slice(a + 1, b));
  return a > 0 && b > a && Number.isFinite(times.run) && Number.isFinite(times.wait);
}
const times = { run: 0, wait: 0 };

/** What the main thread answers (capture.js's probe): the request it serves and its loop iteration. */
async function probe() {
  const r = await post('Runtime.evaluate', { expression: EVALUATE, returnByValue: true });
  const v = r && r.result && r.result.value;
  return v && typeof v === 'object' ? v : { route: null, loops: -1 };
}

function post(method, params) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${method}: no answer in ${ANSWER_MS} ms`)), ANSWER_MS);
    session.post(method, params, (err, result) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(result);
    });
    // Once the block is over the main thread may be idle: wake it to read this (Node 24+).
    if (stopping) parentPort.postMessage({ type: 'poke' });
  });
}

function fail(err) {
  parentPort.postMessage({ type: 'error', message: String((err && err.message) || err) });
}

/**
 * A capture that did not complete because the main thread answered late or not at all (inside
 * V8's GC, in one native call): its commands time out or meet a profile already gone
 * ("No recording profiles found", "Session was closed"). Counted, not an error of the agent.
 */
function missed(err) {
  parentPort.postMessage({ type: 'missed', message: String((err && err.message) || err) });
}

async function start() {
  capturing = true;
  // A session only while a capture runs: none is attached while the loop is healthy, and none
  // at exit (Node waits for connected sessions there and says so on stderr).
  if (!connected) {
    session.connectToMainThread();
    connected = true;
  }
  starting = true;
  route = null;
  loops = -1;
  probedAt = 0n;
  confirmed = false;
  checking = false;
  profiling = false;
  try {
    await post('Profiler.enable');
    await post('Profiler.setSamplingInterval', { interval: intervalUs });
    await post('Profiler.start');
    profiling = true;
    // Answered by an interrupt while the block's callback is on the stack: what it serves.
    const p = await probe();
    route = typeof p.route === 'string' ? p.route : null;
    loops = typeof p.loops === 'number' ? p.loops : -1;
    probedAt = process.hrtime.bigint();
  } catch (err) {
    missed(err);
  } finally {
    starting = false;
    startedPoll = true;
  }
}

/** At thresholdMs into a captured block: still the loop iteration the capture began in? */
async function check() {
  try {
    const p = await probe();
    confirmed = loops >= 0 && p.loops === loops;
  } catch (err) {
    missed(err);
  }
}

async function stop(since, endedAt, ranMs) {
  stopping = true;
  try {
    await finish(since, endedAt, ranMs);
  } finally {
    stopping = false;
  }
}

async function finish(since, endedAt, ranMs) {
  const durationMs = Number(endedAt - since) / 1e6;
  let profile = null;
  // An idle main thread may not read its session until something wakes it: a message does.
  parentPort.postMessage({ type: 'poke' });
  try {
    await pending;
  } catch (err) {
    missed(err);
  }
  // Stopped even when the start was not answered (in time): it may still be, later, and no
  // profile may keep running.
  const answer = post('Profiler.stop');
  parentPort.postMessage({ type: 'poke' });
  try {
    profile = (await answer).profile;
  } catch (err) {
    if (profiling) missed(err);
  }
  capturing = false;
  session.disconnect();
  connected = false;
  // The threshold is on the main thread's time on a CPU: a short callback stretched by a host
  // that gave the thread no CPU is the cpu-starved finding's, not a blocker.
  if (durationMs < thresholdMs || ranMs < thresholdMs) return;
  const startedMs = Date.now() - Number(process.hrtime.bigint() - since) / 1e6;
  // The main thread answered nothing while the block lasted: no JavaScript ran in it (one call
  // into native code, a synchronous crypto, zlib or fs call or an addon, or V8's GC), so no
  // interrupt could start the profiler. Timed, not captured.
  if (probedAt === 0n || probedAt > endedAt) {
    parentPort.postMessage({ type: 'block', durationMs, ranMs, startedMs, route: null, samples: 0, capturedMs: 0, gcShare: 0, blockers: [], uncaptured: 'no JavaScript ran during the block (one native call or a GC): the profiler could not start' });
    return;
  }
  // Not confirmed: the loop went round between the probes (many callbacks, none of them a block).
  if (!confirmed) return;
  const block = summarize(profile, { endUs: Number(endedAt / 1000n), root });
  parentPort.postMessage({ type: 'block', durationMs, ranMs, startedMs, route, ...block, uncaptured: null });
}

function poll() {
  if (closed) return;
  const now = process.hrtime.bigint();
  if (!readTimes(times)) return fail(new Error(`cannot read ${statPath}`));
  const run = times.run;
  const awake = times.run + times.wait;
  // The main thread was on a CPU or waiting for one under half the window: it slept, no block
  // began. One short read: most polls of a healthy process end here.
  const wall = Number(now - lastAt);
  if (blockedSince === 0n && !capturing && awake - lastAwake < wall / 2) {
    lastAt = now;
    lastRun = run;
    lastAwake = awake;
    lastSleeps = -1;
    entryAt = 0n;
    setTimeout(poll, awake - lastAwake < QUIET * wall ? pollMs * QUIET_FACTOR : pollMs);
    return;
  }
  if (lastSleeps < 0 && blockedSince === 0n) {
    // Awake most of a window after a quiet one: the activity began about this long ago.
    entryAt = now - BigInt(Math.min(wall, awake - lastAwake));
    entryRun = lastRun;
  }
  const status = readStatus();
  if (status === null) return fail(new Error(`cannot read ${statPath}`));
  const tolerate = starting || startedPoll;
  if (!starting) startedPoll = false;
  const blocked = status.running && lastSleeps >= 0 && (status.sleeps === lastSleeps || (capturing && tolerate));
  if (blocked) {
    if (blockedSince === 0n) {
      blockedSince = entryAt !== 0n ? entryAt : lastAt;
      blockedRunNs = entryAt !== 0n ? entryRun : lastRun;
    }
    const ms = Number(now - blockedSince) / 1e6;
    if (stopping) {
      // The previous capture is still being stopped: this block is timed from here, uncaptured.
    } else if (!capturing && ms >= armMs) {
      pending = start();
    } else if (capturing && !checking && loops >= 0 && ms >= thresholdMs && now - probedAt >= BigInt(pollMs) * 1000000n) {
      // A poll after the start's probe at least: two probes answered together would read the
      // same count whatever the loop did.
      checking = true;
      pending = check();
    }
  } else if (lastSleeps >= 0) {
    entryAt = 0n; // a window with a sleep: the next activity starts afresh
  }
  if (!blocked && blockedSince !== 0n) {
    const since = blockedSince;
    blockedSince = 0n;
    // The block ended in this window: at its start, give or take the window.
    if (capturing) stop(since, lastAt, (run - blockedRunNs) / 1e6);
  }
  lastAt = now;
  lastRun = run;
  lastAwake = awake;
  lastSleeps = status.sleeps;
  setTimeout(poll, pollMs);
}

(async () => {
  try {
    fd = fs.openSync(statPath, 'r');
    schedFd = fs.openSync(statPath.replace(/status$/, 'schedstat'), 'r');
    lastAt = process.hrtime.bigint();
    if (readTimes(times)) {
      lastRun = times.run;
      lastAwake = times.run + times.wait;
    }
    parentPort.on('message', (m) => {
      if (m === 'close') {
        closed = true;
        if (connected) session.disconnect();
        fs.closeSync(fd);
        fs.closeSync(schedFd);
        parentPort.close();
      }
    });
    setTimeout(poll, pollMs);
    parentPort.postMessage({ type: 'ready' });
  } catch (err) {
    fail(err);
  }
})();
