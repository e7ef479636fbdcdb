'use strict';

// How long the main thread stops when a watchdog worker's inspector session
// (connectToMainThread) starts and stops V8's CPU profiler during a block, and what each sample
// costs the main thread, for the blocked-loop capture (lib/sources/blockers/).
//
//   node bench/blockers-stop.js [--rounds 5] [--interval-us 1000]
//
// The main thread spins in JavaScript, reading performance.now() in a tight loop: the longest gap
// between two readings while the worker's Profiler.start (then Profiler.stop) is answered is the
// stop that command caused; the spin's readings per ms with the profiler running against without
// give the cost per sample (fraction of lost readings x the sampling interval). Bounded: rounds x
// ~1.5 s; a watchdog aborts after 60 s.

const { Worker } = require('worker_threads');
const { performance } = require('perf_hooks');

function parseArgs(argv) {
  const opts = { rounds: 5, 'interval-us': 1000 };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(rounds|interval-us)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]}: node bench/blockers-stop.js [--rounds 5] [--interval-us 1000]`);
    opts[m[1]] = Number(m[2] !== undefined ? m[2] : argv[++i]);
  }
  return opts;
}

// Note: the figures are wall-clock gaps; on a shared machine the thread's own preemption adds to
// them (the baseline row shows how much).
// The worker: waits for a command in shared memory, posts it on its session, stores when the
// answer came and the profile's sample count.
const WORKER = `
const { workerData, parentPort } = require('worker_threads');
const { Session } = require('inspector');
const state = new Int32Array(workerData.sab);
const session = new Session();
session.connectToMainThread();
function post(method, params) { return new Promise((res, rej) => session.post(method, params, (e, r) => (e ? rej(e) : res(r)))); }
parentPort.on('message', async ({ cmd, seq }) => {
    if (cmd === 9) return session.disconnect();
    if (cmd === 3) {
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: workerData.intervalUs });
    }
    const r = cmd === 3 ? null : await post(cmd === 1 ? 'Profiler.start' : 'Profiler.stop');
    Atomics.store(state, 1, cmd === 2 ? r.profile.samples.length : 0);
    Atomics.store(state, 0, 0);
    Atomics.store(state, 2, seq);
});
`;

/** Spins for ms; the longest gap between two clock readings (ms) and the readings per ms. */
function spin(ms) {
  const t0 = performance.now();
  let last = t0;
  let maxGap = 0;
  let n = 0;
  for (;;) {
    const now = performance.now();
    const gap = now - last;
    if (gap > maxGap) maxGap = gap;
    last = now;
    n++;
    if (now - t0 >= ms) break;
  }
  return { maxGap, perMs: n / (performance.now() - t0) };
}

/** Spins until the worker answered `cmd` (1 start, 2 stop); gap while waiting, answer delay. */
let seq = 0;
function during(worker, state, cmd) {
  const mine = ++seq;
  // The clock starts before the post: the command may be answered (by an interrupt) at the first
  // check for one after it, before the next line.
  const t0 = performance.now();
  let last = t0;
  worker.postMessage({ cmd, seq: mine });
  let maxGap = 0;
  for (;;) {
    const now = performance.now();
    if (now - last > maxGap) maxGap = now - last;
    last = now;
    if (Atomics.load(state, 2) === mine) return { maxGap, answeredMs: now - t0, samples: Atomics.load(state, 1) };
    if (now - t0 > 1000) return { maxGap, answeredMs: NaN, samples: 0 };
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const dog = setTimeout(() => { console.error('watchdog: aborting'); process.exit(2); }, 60000);
  const sab = new SharedArrayBuffer(16);
  const state = new Int32Array(sab);
  const worker = new Worker(WORKER, { eval: true, workerData: { sab, intervalUs: opts['interval-us'] } });
  await new Promise((r) => setTimeout(r, 300)); // the worker is up
  // An idle main thread may not answer its session (Node 24+: not before its next timer): every
  // command is posted while it spins, as the watchdog's are while the loop is blocked.
  during(worker, state, 3);
  const rows = [];
  for (let r = 0; r < opts.rounds; r++) {
    const base = spin(200);
    const start = during(worker, state, 1);
    const running = spin(200);
    const stop = during(worker, state, 2);
    rows.push({ base, start, running, stop });
    await new Promise((res) => setTimeout(res, 50));
  }
  worker.postMessage({ cmd: 9, seq: 0 });
  await worker.terminate();
  clearTimeout(dog);
  const med = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const f = (x) => x.toFixed(2);
  const lost = rows.map((x) => 1 - x.running.perMs / x.base.perMs);
  console.log(`node ${process.version}, sampling interval ${opts['interval-us']} us, ${opts.rounds} rounds (median [min..max])`);
  const show = (name, xs) => console.log(`${name.padEnd(34)} ${f(med(xs))} [${f(Math.min(...xs))}..${f(Math.max(...xs))}]`);
  show('Profiler.start answered after (ms)', rows.map((x) => x.start.answeredMs));
  show('main stopped by start (ms)', rows.map((x) => x.start.maxGap));
  show('longest gap, profiler running (ms)', rows.map((x) => x.running.maxGap));
  show('longest gap, baseline (ms)', rows.map((x) => x.base.maxGap));
  show('Profiler.stop answered after (ms)', rows.map((x) => x.stop.answeredMs));
  show('main stopped by stop (ms)', rows.map((x) => x.stop.maxGap));
  show('spin lost while profiling (%)', lost.map((x) => x * 100));
  show('cost per sample (us)', lost.map((x) => x * opts['interval-us']));
  show('samples per profile', rows.map((x) => x.stop.samples));
}

main().catch((err) => { console.error(err); process.exit(1); });
