'use strict';

// The watchdog: runs in a worker thread (blockers/capture.js starts it, unref'd). It never
// touches the main thread while the loop is healthy: every pollMs it reads the kernel's account
// of the main thread (/proc/self/task/<tid>/status: its state and how often it went to sleep)
// and calls a window "blocked" when the main thread is running (or waiting for a CPU) and did not
// sleep in it (a loop that returns to its poll with nothing to do sleeps there). After armMs of
// blocked windows it starts V8's CPU profiler on the main thread through an inspector session
// (connectToMainThread: answered by an interrupt of the running JavaScript) and asks the main
// thread what it serves and its loop iteration; at thresholdMs it asks for the iteration again:
// a loop that went round in between (a chain of short immediates never sleeps) is no block, and
// the capture is dropped. When the main thread sleeps again it stops the profiler, cuts the
// profile at the block's end and posts the block with its blockers (summary.js) to the main
// thread. Blocks shorter than thresholdMs are dropped.

const fs = require('fs');
const { parentPort, workerData } = require('worker_threads');
const { Session } = require('inspector');
const { summarize } = require('./summary');

const { statPath, thresholdMs, pollMs, armMs, intervalUs, root } = workerData;
// Commands the main thread does not answer within this long are given up (Node 24+ answers an
// idle main thread's session only at its next timer; a poke (below) wakes it).
const ANSWER_MS = 2000;

// A block in which the main thread ran less than this share of the time (the rest it waited for
// a CPU) is the host's doing, not the app's (the cpu-starved finding's): dropped.
const MIN_RUN = 0.5;

const session = new Session();
let fd = -1;
let schedFd = -1;
let blockedRunNs = 0;
const buf = Buffer.alloc(4096);
let lastAt = 0n;
let lastSleeps = 0;
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

/** The main thread's time on a CPU so far (ns; schedstat's first field), or -1. */
function runNs() {
  const n = fs.readSync(schedFd, buf, 0, 64, 0);
  const s = buf.toString('latin1', 0, n);
  const v = Number(s.slice(0, s.indexOf(' ')));
  return Number.isFinite(v) ? v : -1;
}

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
  });
}

function fail(err) {
  parentPort.postMessage({ type: 'error', message: String((err && err.message) || err) });
}

async function start() {
  capturing = true;
  starting = true;
  route = null;
  loops = -1;
  probedAt = 0n;
  confirmed = false;
  checking = false;
  profiling = false;
  try {
    await post('Profiler.start');
    profiling = true;
    // Answered by an interrupt while the block's callback is on the stack: what it serves.
    const p = await probe();
    route = typeof p.route === 'string' ? p.route : null;
    loops = typeof p.loops === 'number' ? p.loops : -1;
    probedAt = process.hrtime.bigint();
  } catch (err) {
    fail(err);
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
    fail(err);
  }
}

async function stop(since, endedAt, ranShare) {
  const durationMs = Number(endedAt - since) / 1e6;
  let profile = null;
  // An idle main thread may not read its session until something wakes it: a message does.
  parentPort.postMessage({ type: 'poke' });
  try {
    await pending;
  } catch (err) {
    fail(err);
  }
  // Stopped even when the start was not answered (in time): it may still be, later, and no
  // profile may keep running.
  const answer = post('Profiler.stop');
  parentPort.postMessage({ type: 'poke' });
  try {
    profile = (await answer).profile;
  } catch (err) {
    if (profiling) fail(err);
  }
  capturing = false;
  if (durationMs < thresholdMs || ranShare < MIN_RUN) return;
  const startedMs = Date.now() - Number(process.hrtime.bigint() - since) / 1e6;
  // The main thread answered nothing while the block lasted: no JavaScript ran in it (one call
  // into native code, a synchronous crypto, zlib or fs call or an addon, or V8's GC), so no
  // interrupt could start the profiler. Timed, not captured.
  if (probedAt === 0n || probedAt > endedAt) {
    parentPort.postMessage({ type: 'block', durationMs, startedMs, route: null, samples: 0, capturedMs: 0, gcShare: 0, blockers: [], uncaptured: 'no JavaScript ran during the block (one native call or a GC): the profiler could not start' });
    return;
  }
  // Not confirmed: the loop went round between the probes (many callbacks, none of them a block).
  if (!confirmed) return;
  const block = summarize(profile, { endUs: Number(endedAt / 1000n), root });
  parentPort.postMessage({ type: 'block', durationMs, startedMs, route, ...block, uncaptured: null });
}

function poll() {
  if (closed) return;
  const now = process.hrtime.bigint();
  const status = readStatus();
  if (status === null) return fail(new Error(`cannot read ${statPath}`));
  const tolerate = starting || startedPoll;
  if (!starting) startedPoll = false;
  const blocked = status.running && (status.sleeps === lastSleeps || (capturing && tolerate));
  if (blocked) {
    if (blockedSince === 0n) {
      blockedSince = lastAt;
      blockedRunNs = runNs();
    }
    const ms = Number(now - blockedSince) / 1e6;
    if (!capturing && ms >= armMs) {
      pending = start();
    } else if (capturing && !checking && loops >= 0 && ms >= thresholdMs && now - probedAt >= BigInt(pollMs) * 1000000n) {
      // A poll after the start's probe at least: two probes answered together would read the
      // same count whatever the loop did.
      checking = true;
      pending = check();
    }
  } else if (blockedSince !== 0n) {
    const since = blockedSince;
    blockedSince = 0n;
    // The block ended in this window: at its start, give or take the window.
    if (capturing) stop(since, lastAt, (runNs() - blockedRunNs) / Number(now - since));
  }
  lastAt = now;
  lastSleeps = status.sleeps;
  setTimeout(poll, pollMs);
}

(async () => {
  try {
    fd = fs.openSync(statPath, 'r');
    schedFd = fs.openSync(statPath.replace(/status$/, 'schedstat'), 'r');
    session.connectToMainThread();
    lastAt = process.hrtime.bigint();
    const status = readStatus();
    lastSleeps = status ? status.sleeps : 0;
    parentPort.on('message', (m) => {
      if (m === 'close') {
        closed = true;
        session.disconnect();
        fs.closeSync(fd);
        fs.closeSync(schedFd);
        parentPort.close();
      }
    });
    setTimeout(poll, pollMs);
    // Posted while the main thread may be idle: the poke wakes it to read them.
    const enabled = post('Profiler.enable');
    const interval = post('Profiler.setSamplingInterval', { interval: intervalUs });
    parentPort.postMessage({ type: 'poke' });
    await enabled;
    await interval;
    parentPort.postMessage({ type: 'ready' });
  } catch (err) {
    fail(err);
  }
})();
