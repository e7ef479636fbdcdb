'use strict';

// What preloading the agent adds to a process that does nothing: `node -r uvscope/register -e 0`
// against `node -e 0`, alternated in one run.
//
//   node bench/startup.js [--runs 40] [--exporters prometheus] [--control] [--json] [--instructions 3]
//
// --control adds a third variant, an empty preload file (bench/fixtures/empty-preload.js): what
// loading any preload costs this Node, which the agent cannot go below.
// Each run spawns a fresh node. Wall time is measured here around the child (spawn to exit, the
// same overhead on both sides); CPU time (user + system) and peak RSS (maxRSS) are read inside the
// child by the app's own code: the app is bench/fixtures/exit-usage.js's text, given with -e in
// every variant, which prints process.resourceUsage() on exit. It was a second preload, loaded
// after the agent: on Node 24 and 26 Node's resolution of that file's path was enough path work
// for V8's first Maglev compile (~2 MB of the compiler's pages) in every variant but the one
// without a preload, which an empty preload file crossed as the agent did. As -e code it adds no
// path resolution: the figures match the whole process's peak (os.wait4 from a parent) within
// 0.1 MB. The order flips every run (without, with / with, without, ...). Printed: the median of
// each variant, the median of the per-pair differences and their interquartile range (the spread
// between runs).
// Bounded: runs x 2 children of ~0.1 s each (~10 s at the defaults); a watchdog ends it at 120 s.
//
// --instructions N: instead, each variant N times under valgrind's callgrind (user-space
// instructions of every thread, from exec to exit), V8's hash and random seeds fixed so a run
// repeats within about 0.1 %: a figure that does not move with the machine's load, as CPU time
// does. Prints the median of each variant. ~10 s a run; needs valgrind.

const path = require('path');
const { spawnSync } = require('child_process');
const { median, quantile, machine } = require('./fixtures/stats');
const { scrubEnv, watchdog } = require('../support/processes');

const REPO = path.resolve(__dirname, '..');
const REGISTER = path.join(REPO, 'register.js');
const fs = require('fs');
// The app of every variant: prints its CPU time and peak RSS on exit.
const EXIT_USAGE = fs.readFileSync(path.join(__dirname, 'fixtures', 'exit-usage.js'), 'utf8');
const EMPTY = path.join(__dirname, 'fixtures', 'empty-preload.js');

function parseArgs(argv) {
  const opts = { runs: 40, exporters: 'prometheus', json: false, control: false, instructions: 0 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--json') { opts.json = true; continue; }
    if (argv[i] === '--control') { opts.control = true; continue; }
    if (argv[i] === '--help' || argv[i] === '-h') {
      console.log('usage: node bench/startup.js [--runs 40] [--exporters prometheus] [--control] [--json] [--instructions 3]');
      process.exit(0);
    }
    const m = /^--(runs|exporters|instructions)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]} (try --help)`);
    const raw = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'runs' || m[1] === 'instructions') {
      const n = Number(raw);
      if (!Number.isInteger(n) || n < (m[1] === 'runs' ? 2 : 1)) throw new Error(`--${m[1]} needs an integer >= ${m[1] === 'runs' ? 2 : 1}, got ${raw}`);
      opts[m[1]] = n;
    } else {
      opts.exporters = raw;
    }
  }
  return opts;
}

/**
 * One child: wall ms (measured here), CPU ms and maxRSS KB (from the child).
 * @param {string[]} preloads
 * @param {NodeJS.ProcessEnv} env
 */
function runOnce(preloads, env) {
  const args = [];
  for (const p of preloads) args.push('--require', p);
  args.push('-e', EXIT_USAGE);
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, { env, encoding: 'utf8', timeout: 30000 });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`child failed (status ${r.status}): ${r.stderr}`);
  const usage = JSON.parse(r.stdout.trim().split('\n').pop());
  return { wallMs, cpuMs: usage.cpuMs, rssKB: usage.maxRSS };
}

/**
 * Alternated runs without and with the agent.
 * @param {{ runs: number, exporters: string }} opts
 * @returns {object} medians and spreads
 */
function measure(opts) {
  const env = scrubEnv();
  const withEnv = { ...env, UVSCOPE_EXPORTERS: opts.exporters, UVSCOPE_PROMETHEUS_PORT: '0' };
  runOnce([], env); // warm the file cache
  runOnce([REGISTER], withEnv);
  const without = [];
  const withAgent = [];
  const control = [];
  const runs = [() => without.push(runOnce([], env)), () => withAgent.push(runOnce([REGISTER], withEnv))];
  if (opts.control) runs.push(() => control.push(runOnce([EMPTY], env)));
  for (let i = 0; i < opts.runs; i++) {
    const order = i % 2 === 0 ? runs : [...runs].reverse();
    for (const run of order) run();
  }
  const out = {};
  for (const key of ['wallMs', 'cpuMs', 'rssKB']) {
    const diffs = without.map((w, i) => withAgent[i][key] - w[key]);
    out[key] = {
      without: median(without.map((r) => r[key])),
      with: median(withAgent.map((r) => r[key])),
      added: median(diffs),
      q1: quantile(diffs, 0.25),
      q3: quantile(diffs, 0.75),
    };
    if (opts.control) out[key].emptyPreloadAdded = median(without.map((w, i) => control[i][key] - w[key]));
  }
  return out;
}

/**
 * User-space instructions of one child from exec to exit, counted by callgrind.
 * @param {string[]} preloads
 * @param {NodeJS.ProcessEnv} env
 * @returns {number}
 */
function instructionsOnce(preloads, env) {
  const args = ['--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, '--hash-seed=1', '--random-seed=1'];
  for (const p of preloads) args.push('--require', p);
  args.push('-e', '0');
  const r = spawnSync('valgrind', args, { env, encoding: 'utf8', timeout: 120000 });
  const m = /Collected : (\d+)/.exec(r.stderr || '');
  if (r.status !== 0 || !m) throw new Error(`valgrind failed (status ${r.status}): ${r.error || r.stderr}`);
  return Number(m[1]);
}

/**
 * --instructions: each variant N times under callgrind, in turn.
 * @param {{ instructions: number, exporters: string, control: boolean }} opts
 */
function countInstructions(opts) {
  const env = scrubEnv();
  const withEnv = { ...env, UVSCOPE_EXPORTERS: opts.exporters, UVSCOPE_PROMETHEUS_PORT: '0' };
  const variants = [['without', [], env], ['with', [REGISTER], withEnv]];
  if (opts.control) variants.push(['empty preload', [EMPTY], env]);
  const counts = variants.map(() => []);
  for (let i = 0; i < opts.instructions; i++) variants.forEach(([, preloads, e], j) => counts[j].push(instructionsOnce(preloads, e)));
  const medians = counts.map((c) => median(c));
  return Object.fromEntries(variants.map(([name], j) => [name, { median: medians[j], min: Math.min(...counts[j]), max: Math.max(...counts[j]) }]));
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  watchdog('bench/startup.js', opts.instructions ? 120000 + opts.instructions * 3 * 60000 : 120000);
  const m = machine();
  if (opts.instructions) {
    const r = countInstructions(opts);
    if (opts.json) {
      console.log(JSON.stringify({ ...m, exporters: opts.exporters, instructions: r }));
      return;
    }
    console.log(`node ${m.node}; ${opts.instructions} run(s) per variant under callgrind, UVSCOPE_EXPORTERS=${opts.exporters}`);
    const base = r.without.median;
    for (const [name, x] of Object.entries(r)) {
      const added = name === 'without' ? '' : `  added ${((x.median - base) / 1e6).toFixed(1)} M`;
      console.log(`${name.padEnd(14)} ${(x.median / 1e6).toFixed(1)} M instructions (${(x.min / 1e6).toFixed(1)}..${(x.max / 1e6).toFixed(1)})${added}`);
    }
    return;
  }
  const r = measure(opts);
  if (opts.json) {
    console.log(JSON.stringify({ ...m, exporters: opts.exporters, runs: opts.runs, ...r }));
    return;
  }
  console.log(`node ${m.node}, ${m.cpus} CPUs, load ${m.load} before the run; ${opts.runs} alternated pairs, UVSCOPE_EXPORTERS=${opts.exporters}`);
  console.log('                 without      with     added (median of pairs)  IQR of added');
  const row = (label, x, unit, f = (v) => v.toFixed(1)) => console.log(
    `${label.padEnd(14)} ${f(x.without).padStart(9)} ${f(x.with).padStart(9)} ${(f(x.added) + ' ' + unit).padStart(14)}            ${f(x.q1)}..${f(x.q3)}`);
  row('wall', r.wallMs, 'ms');
  row('cpu (u+s)', r.cpuMs, 'ms');
  row('max RSS', r.rssKB, 'MB', (v) => (v / 1024).toFixed(1));
  if (opts.control) {
    console.log(`an empty preload file adds (median of pairs): wall ${r.wallMs.emptyPreloadAdded.toFixed(1)} ms, cpu ${r.cpuMs.emptyPreloadAdded.toFixed(1)} ms, max RSS ${(r.rssKB.emptyPreloadAdded / 1024).toFixed(1)} MB`);
  }
  console.log(`load after the run: ${machine().load}`);
}

if (require.main === module) main();

module.exports = { measure, runOnce };
