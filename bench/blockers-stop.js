'use strict';

// How long the main thread stops for each stack sample of the blocked-loop capture
// (lib/sources/blockers/): a worker calls Sentry's native captureStackTrace() (V8's
// RequestInterrupt, answered at the main thread's next interrupt check) every --every-ms while
// the main thread spins in JavaScript at a stack --depth frames deep.
//
//   node bench/blockers-stop.js [--rounds 5] [--every-ms 5] [--depth 30]
//
// The spin does a fixed amount of work (reading performance.now() N times); the main thread's own
// time on a CPU for it (/proc/thread-self/schedstat: preemption by the other processes of a shared
// machine does not count) sampled against without, over the samples taken, is what one sample
// costs the main thread: how long it stops it (the interrupt's stack walk). The longest gap
// between two readings is wall time (preemption counts), shown against the baseline's. The worker
// times each capture's round trip and its own CPU per sample (the capture's thread included). Bounded: rounds x ~0.5 s; a watchdog aborts after 60 s.

const { Worker } = require('worker_threads');
const { performance } = require('perf_hooks');
const native = require.resolve('@sentry-internal/node-native-stacktrace');

function parseArgs(argv) {
  const opts = { rounds: 5, 'every-ms': 5, depth: 30 };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(rounds|every-ms|depth)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]}: node bench/blockers-stop.js [--rounds 5] [--every-ms 5] [--depth 30]`);
    opts[m[1]] = Number(m[2] !== undefined ? m[2] : argv[++i]);
  }
  return opts;
}

// The worker: while state[0] is 1, a capture, then a sleep of everyMs (as the watchdog's timer
// does); counts captures and sums their round trips.
const WORKER = `
const { workerData } = require('worker_threads');
const { captureStackTrace } = require(workerData.native);
const state = new Int32Array(workerData.sab);
const trips = new Float64Array(workerData.trips);
const cpu = () => Number(require('fs').readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]);
for (;;) {
  Atomics.wait(state, 0, 0);
  if (Atomics.load(state, 0) === 2) break;
  const cpu0 = cpu();
  while (Atomics.load(state, 0) === 1) {
    Atomics.wait(state, 1, 0, workerData.everyMs);
    const t0 = process.hrtime.bigint();
    const r = captureStackTrace();
    const dt = Number(process.hrtime.bigint() - t0) / 1e6;
    trips[0] += dt;
    trips[1] = Math.max(trips[1], dt);
    trips[2] += 1;
    trips[3] = Object.values(r)[0] ? Object.values(r)[0].frames.length : 0;
  }
  trips[4] = cpu() - cpu0;
}
`;

const fs = require('fs');
/** The main thread's time on a CPU so far (ns). */
const runNs = () => Number(fs.readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]);

/** Reads the clock n times at `depth` frames; the longest gap between two readings (ms), CPU ns. */
function spinAt(depth, n) {
  if (depth > 1) return spinAt(depth - 1, n);
  const run0 = runNs();
  let last = performance.now();
  let maxGap = 0;
  for (let i = 0; i < n; i++) {
    const now = performance.now();
    if (now - last > maxGap) maxGap = now - last;
    last = now;
  }
  return { maxGap, cpuNs: runNs() - run0 };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const dog = setTimeout(() => { console.error('watchdog: aborting'); process.exit(2); }, 60000);
  require(native).registerThread();
  const sab = new SharedArrayBuffer(8); // [0] 1 sampling, 2 done; [1] stays 0 (the worker's sleep)
  const tripsBuf = new SharedArrayBuffer(40);
  const state = new Int32Array(sab);
  const trips = new Float64Array(tripsBuf);
  const worker = new Worker(WORKER, { eval: true, workerData: { sab, trips: tripsBuf, native, everyMs: opts['every-ms'] } });
  await new Promise((r) => setTimeout(r, 300)); // the worker is up
  // Readings for ~200 ms of spin on this machine.
  const t0 = performance.now();
  spinAt(opts.depth, 1e6);
  const n = Math.round((1e6 * 200) / (performance.now() - t0));
  const rows = [];
  for (let r = 0; r < opts.rounds; r++) {
    const base = spinAt(opts.depth, n);
    trips.fill(0);
    Atomics.store(state, 0, 1);
    Atomics.notify(state, 0);
    const sampled = spinAt(opts.depth, n);
    Atomics.store(state, 0, 0);
    // The worker's last capture is answered when this thread runs JavaScript again: wait for its figures.
    for (let i = 0; i < 200 && trips[4] === 0; i++) await new Promise((res) => setTimeout(res, 5));
    rows.push({ workerUs: trips[4] / 1000 / trips[2], base, sampled, n: trips[2], tripMs: trips[0] / trips[2], maxTripMs: trips[1], frames: trips[3], perSampleUs: (sampled.cpuNs - base.cpuNs) / 1000 / trips[2], extra: (sampled.cpuNs - base.cpuNs) / base.cpuNs });
  }
  Atomics.store(state, 0, 2);
  Atomics.notify(state, 0);
  await worker.terminate();
  clearTimeout(dog);
  const med = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const f = (x) => x.toFixed(3);
  console.log(`node ${process.version}, a sample every ${opts['every-ms']} ms, spin ${opts.depth} frames deep, ${opts.rounds} rounds of ~200 ms (median [min..max])`);
  const show = (name, xs) => console.log(`${name.padEnd(36)} ${f(med(xs))} [${f(Math.min(...xs))}..${f(Math.max(...xs))}]`);
  show('samples per round', rows.map((x) => x.n));
  show('frames per sample', rows.map((x) => x.frames));
  show('round trip per sample (ms)', rows.map((x) => x.tripMs));
  show('longest round trip (ms)', rows.map((x) => x.maxTripMs));
  show('longest gap, sampled (ms)', rows.map((x) => x.sampled.maxGap));
  show('longest gap, baseline (ms)', rows.map((x) => x.base.maxGap));
  show('main thread CPU, sampled / base - 1 (%)', rows.map((x) => x.extra * 100));
  show('main thread per sample (us)', rows.map((x) => x.perSampleUs));
  show('watchdog thread per sample (us)', rows.map((x) => x.workerUs));
}

main().catch((err) => { console.error(err); process.exit(1); });
