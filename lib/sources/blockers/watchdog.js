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
// V8 parks the main thread briefly while its helpers finish a GC (a futex wait, a voluntary
// switch): a window with at most this many still counts as blocked.
const SLEEPS = 1;
// Commands the main thread does not answer within this long are given up (Node 24+ answers an
// idle main thread's session only at its next timer; a poke (below) wakes it).
const ANSWER_MS = 2000;

const session = new Session();
let fd = -1;
const buf = Buffer.alloc(4096);
let lastAt = 0n;
let lastSleeps = 0;
// The current block: since when the main thread has not slept (hrtime ns), whether the profiler runs.
let blockedSince = 0n;
let capturing = false;
let route = null;
let loops = -1;
let oneIteration = true;
let checked = false;
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
  route = null;
  loops = -1;
  oneIteration = true;
  checked = false;
  try {
    await post('Profiler.start');
    // Answered by an interrupt while the block's callback is on the stack: what it serves.
    const p = await probe();
    route = typeof p.route === 'string' ? p.route : null;
    loops = typeof p.loops === 'number' ? p.loops : -1;
  } catch (err) {
    fail(err);
  }
}

/** At thresholdMs into a captured block: still the iteration the capture began in? */
async function check() {
  checked = true;
  try {
    const p = await probe();
    if (loops >= 0 && typeof p.loops === 'number' && p.loops !== loops) oneIteration = false;
  } catch (err) {
    fail(err);
  }
}

async function stop(since, endedAt) {
  const durationMs = Number(endedAt - since) / 1e6;
  let profile = null;
  try {
    const answer = post('Profiler.stop');
    // An idle main thread may not read its session until something wakes it: a message does.
    parentPort.postMessage({ type: 'poke' });
    profile = (await answer).profile;
  } catch (err) {
    fail(err);
  }
  capturing = false;
  if (durationMs < thresholdMs || !oneIteration) return;
  const block = summarize(profile, { endUs: Number(endedAt / 1000n), root });
  parentPort.postMessage({ type: 'block', durationMs, startedMs: Date.now() - Number(process.hrtime.bigint() - since) / 1e6, route, ...block });
}

function poll() {
  if (closed) return;
  const now = process.hrtime.bigint();
  const status = readStatus();
  if (status === null) return fail(new Error(`cannot read ${statPath}`));
  const blocked = status.running && status.sleeps - lastSleeps <= SLEEPS;
  if (blocked) {
    if (blockedSince === 0n) blockedSince = lastAt;
    const ms = Number(now - blockedSince) / 1e6;
    if (!capturing && ms >= armMs) start();
    else if (capturing && !checked && ms >= thresholdMs) check();
  } else if (blockedSince !== 0n) {
    const since = blockedSince;
    blockedSince = 0n;
    // The block ended in this window: at its start, give or take the window.
    if (capturing) stop(since, lastAt);
  }
  lastAt = now;
  lastSleeps = status.sleeps;
  setTimeout(poll, pollMs);
}

(async () => {
  try {
    fd = fs.openSync(statPath, 'r');
    session.connectToMainThread();
    lastAt = process.hrtime.bigint();
    const status = readStatus();
    lastSleeps = status ? status.sleeps : 0;
    parentPort.on('message', (m) => {
      if (m === 'close') {
        closed = true;
        session.disconnect();
        fs.closeSync(fd);
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
