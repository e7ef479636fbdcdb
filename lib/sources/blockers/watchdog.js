'use strict';

// The watchdog: runs in a worker thread (blockers/capture.js starts it, unref'd). Nothing runs on
// the main thread while the loop is healthy. Every pollMs (x4 while the main thread is quiet) it
// reads the kernel's account of the main thread, /proc/self/task/<tid>/schedstat (time on a CPU
// and waiting for one). When the main thread was awake most of a window it posts the main thread
// an "arm" message, answered (capture.js writes the time into a shared buffer) as soon as the
// callback that runs returns: a loop going round answers within a millisecond, a blocked one only
// when the block ends (a major GC's parallel phases sleep the main thread, so sleeps cannot tell).
// While the arm is unanswered it takes a stack sample every sampleMs with Sentry's native capture
// (V8's RequestInterrupt: the stack running during the block, answered at the main thread's next
// interrupt check; a long native call answers when it returns, its app frame on the stack), each
// weighted by the time since the previous answer. Once answered, a block that lasted thresholdMs
// (less the time the main thread waited for a CPU) is posted with its blockers (summary.js).

const fs = require('fs');
const { parentPort, workerData } = require('worker_threads');
const path = require('path');
const { summarize } = require('./summary');

const { schedPath, thresholdMs, pollMs, sampleMs, shared, gate: gateBuffer, root, nativeFile } = workerData;
// While the main thread is quiet (awake under QUIET of the last window) the watchdog polls this
// much less often: each wake-up of a thread costs ~0.1 ms of CPU on a busy 2-CPU VM.
const QUIET = 0.1;
const QUIET_FACTOR = 4;
// Samples kept per block: past it, each new one replaces the one after the shortest (a 60 s
// block at 5 ms would be 12,000 stacks).
const MAX_SAMPLES = 400;

const { captureStackTrace } = require(nativeFile);
const answer = new BigInt64Array(shared); // [0] the last arm answered, [1] when (hrtime ns)
// [0] 1: no more captures (the process exits, capture.js #shut()); [1] 1 while one runs
const gate = new Int32Array(gateBuffer);
const buf = Buffer.alloc(128);
// The main thread's answer to an arm (capture.js): a stack in it is after the block.
const OWN = path.join(__dirname, 'capture.js');
const MESSAGE_PORT = 'node:internal/per_context/messageport';
let fd = -1;
let statusFd = -1;
const status = Buffer.alloc(1024);
let closed = false;
let lastAt = 0n;
let lastRun = 0;
let lastWait = 0;
// The current candidate: the arm posted (its number, when) and where the activity began.
let seq = 0;
let since = 0n; // 0n: no candidate
let armedAt = 0n; // when the arm was posted
let sinceWait = 0; // the main thread's wait for a CPU (ns) when it began
let prevAnswer = 0n; // the last sample's answer, or the start
/** @type {{ frames: any[], ms: number }[]} */
let samples = [];
let missed = 0;
let firstAt = 0n; // the first sample's answer: inside the block
let timer = null;

const STATE = /^State:\s+(\S)/m;
/** Whether the main thread is running or runnable (its status's State R), or true when unreadable. */
function running() {
  const n = fs.readSync(statusFd, status, 0, status.length, 0);
  const m = STATE.exec(status.toString('latin1', 0, Math.min(n, 256)));
  return !m || m[1] === 'R';
}

/** The main thread's time so far (ns) on a CPU and waiting for one; false when unreadable. */
function readTimes(t) {
  const n = fs.readSync(fd, buf, 0, buf.length, 0);
  const s = buf.toString('latin1', 0, n);
  const a = s.indexOf(' ');
  const b = s.indexOf(' ', a + 1);
  t.run = Number(s.slice(0, a));
  t.wait = Number(s.slice(a + 1, b));
  return a > 0 && b > a && Number.isFinite(t.run) && Number.isFinite(t.wait);
}
const times = { run: 0, wait: 0 };

function arm(now, from) {
  seq++;
  armedAt = now;
  since = from;
  sinceWait = times.wait;
  prevAnswer = from;
  samples = [];
  missed = 0;
  parentPort.postMessage({ type: 'arm', seq });
}

/** The arm's answer time, or 0n while the main thread has not answered it. */
function answered() {
  return Atomics.load(answer, 0) === BigInt(seq) ? Atomics.load(answer, 1) : 0n;
}

/** One stack sample of the main thread, weighted by the time since the previous answer. */
function sample() {
  // Not on a CPU nor waiting for one: the main thread sleeps, in its poll (the block is over, the
  // arm's answer on its way) or in a GC's wait for its helpers. An interrupt would be answered by
  // the next JavaScript to run, whatever it is: no sample.
  if (!running()) return;
  let frames = null;
  const asked = process.hrtime.bigint();
  // Marked before the gate is read: the main thread, closing it, then waits for this one.
  Atomics.store(gate, 1, 1);
  if (Atomics.load(gate, 0) === 1) return void Atomics.store(gate, 1, 0);
  try {
    const r = captureStackTrace();
    for (const k in r) frames = r[k].frames; // the main thread: the only other registered one
  } catch {
    frames = null;
  }
  Atomics.store(gate, 1, 0);
  let at = process.hrtime.bigint();
  const end = answered();
  // The block had ended when this was asked, or the interrupt waited for the next JavaScript
  // after it (the arm's own answer, here): not the block's stack. Asked during the block and
  // answered after its callback's last native call (the arm answered meanwhile), it is.
  if (end !== 0n && end < asked || frames && frames.some((f) => f.filename === OWN)) return;
  // At the entry of a message's dispatch (the arm's answer about to run): between callbacks.
  if (frames && frames.length && frames[0].filename === MESSAGE_PORT) return;
  if (end !== 0n && end < at) at = end;
  if (!frames || frames.length === 0) {
    missed++;
    return;
  }
  const ms = Number(at - prevAnswer) / 1e6;
  prevAnswer = at;
  if (samples.length >= MAX_SAMPLES) {
    // Merge the two neighbours whose sum is smallest: the time stays, the resolution drops.
    let min = 0;
    for (let i = 1; i < samples.length - 1; i++) if (samples[i].ms + samples[i + 1].ms < samples[min].ms + samples[min + 1].ms) min = i;
    samples[min + 1].ms += samples[min].ms;
    samples.splice(min, 1);
  }
  if (samples.length === 0) firstAt = at;
  samples.push({ frames, ms });
}

/**
 * How the block's route is known: 'handler' when a stack ran in an HTTP server's request handler,
 * 'body' when one ran from a stream's end (a request body's 'end' handler), else null.
 */
function via(list) {
  let body = false;
  for (const s of list) {
    for (const f of s.frames) {
      if (f.function === 'parserOnIncoming' && f.filename === 'node:_http_server') return 'handler';
      if (f.function === 'endReadableNT') body = true;
    }
  }
  return body ? 'body' : null;
}

/** The block ended at `end` (the arm's answer): posted when it counts. */
function finish(end) {
  const start = since;
  const durationMs = Number(end - start) / 1e6;
  const waitMs = (times.wait - sinceWait) / 1e6;
  const list = samples;
  since = 0n;
  samples = [];
  // The threshold is on the time the main thread did not wait for a CPU: a short callback
  // stretched by a host that gave it no CPU is the cpu-starved finding's, not a blocker.
  if (durationMs < thresholdMs || durationMs - waitMs < thresholdMs) return;
  // What is certain is the hold from the arm to its answer, with a stack sampled in it; the time
  // before the arm is the window's awake time, which a loop going round (a chain of immediates)
  // has too, and a watchdog the host kept off a CPU arms late: an answer within a poll is no block.
  if (list.length === 0 || end - armedAt < BigInt(pollMs) * 1000000n) return;
  // The time after the last answer ran the last stack sampled.
  if (list.length && end > prevAnswer) list[list.length - 1].ms += Number(end - prevAnswer) / 1e6;
  const startedMs = Date.now() - Number(process.hrtime.bigint() - start) / 1e6;
  const block = summarize(list, root);
  parentPort.postMessage({
    type: 'block', durationMs, ranMs: durationMs - waitMs, startedMs, startNs: String(start), endNs: String(end), firstNs: String(firstAt), via: via(list), ...block, missed,
    uncaptured: null,
  });
}

function poll() {
  timer = null;
  if (closed) return;
  const now = process.hrtime.bigint();
  const prevRun = lastRun;
  const prevWait = lastWait;
  const wall = Number(now - lastAt);
  if (!readTimes(times)) return void parentPort.postMessage({ type: 'error', message: `cannot read ${schedPath}` });
  lastAt = now;
  lastRun = times.run;
  lastWait = times.wait;
  const awake = times.run + times.wait - prevRun - prevWait;
  let next = pollMs;
  if (since !== 0n) {
    // Armed: answered (the block, if any, ended), else one more sample.
    let end = answered();
    if (end === 0n) {
      sample();
      end = answered();
    }
    if (end !== 0n) finish(end);
    else next = sampleMs;
  } else if (awake >= wall / 2) {
    // Awake most of a window: the activity began about this long ago (or at the last answer).
    const from = now - BigInt(Math.min(wall, awake));
    const last = Atomics.load(answer, 1);
    arm(now, last > from ? last : from);
    next = sampleMs;
  } else if (awake < QUIET * wall) {
    next = pollMs * QUIET_FACTOR;
  }
  timer = setTimeout(poll, next);
}

try {
  fd = fs.openSync(schedPath, 'r');
  statusFd = fs.openSync(schedPath.replace(/schedstat$/, 'status'), 'r');
  lastAt = process.hrtime.bigint();
  if (readTimes(times)) {
    lastRun = times.run;
    lastWait = times.wait;
  }
  parentPort.on('message', (m) => {
    if (m === 'close') {
      closed = true;
      if (timer) clearTimeout(timer);
      fs.closeSync(fd);
      fs.closeSync(statusFd);
      parentPort.close();
    }
  });
  timer = setTimeout(poll, pollMs);
  parentPort.postMessage({ type: 'ready' });
} catch (err) {
  parentPort.postMessage({ type: 'error', message: String((err && err.message) || err) });
}
