'use strict';

// Instructions of uvscope's own work per DNS lookup (the wrapper, the slot model, the name's
// figures), counted by valgrind's callgrind on the main thread: the lookups of
// bench/fixtures/lookup-own.js on a fake dns module that answers at once, with the DNS sampler
// minus without it, per lookup. No getaddrinfo, no agent, no timer: the lookups' path alone.
//
//   node bench/lookup-own.js [--apis promises,callback] [--count 5000] [--warmup 3000]
//                            [--base DIR] [--node-flags '--no-opt --no-maglev'] [--json]
//
// --node-flags: for every child (default '--no-opt --no-maglev': V8's interpreter and baseline
// code, as bench/instructions.js's path; '' for V8's defaults, then --count 20000 --warmup 20000
// so that the path is optimized). --base DIR: the sampler of another checkout too (before and
// after a change). Always with --single-threaded --hash-seed=1 --random-seed=1 (V8 compiles and
// collects on the main thread; callers sampled at the same random gaps). One valgrind at a time.

const path = require('path');
const fs = require('fs');
const os = require('os');
const { execFileSync, spawnSync } = require('child_process');

const REPO = path.resolve(__dirname, '..');
const APP = path.join(__dirname, 'fixtures', 'lookup-own.js');

function parseArgs(argv) {
  const opts = { apis: ['promises', 'callback'], count: 5000, warmup: 3000, base: null, nodeFlags: ['--no-opt', '--no-maglev'], json: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--json') {
      opts.json = true;
      continue;
    }
    const m = /^--(apis|count|warmup|base|node-flags)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]}`);
    const value = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'apis') opts.apis = value.split(',').filter((a) => a === 'promises' || a === 'callback');
    else if (m[1] === 'base') opts.base = path.resolve(value);
    else if (m[1] === 'node-flags') opts.nodeFlags = String(value).split(/\s+/).filter(Boolean);
    else {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new Error(`--${m[1]}: a positive integer, got ${value}`);
      opts[m[1]] = n;
    }
  }
  return opts;
}

// The main thread's instructions between the app's zero and dump.
function count(api, samplerDir, opts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-lookup-own-'));
  try {
    const out = path.join(dir, 'cg.out');
    const r = spawnSync('valgrind', ['--tool=callgrind', '--dump-instr=no', '--smc-check=all-non-file', '--separate-threads=yes', `--callgrind-out-file=${out}`,
      process.execPath, '--single-threaded', '--hash-seed=1', '--random-seed=1', ...opts.nodeFlags, APP], {
      env: { ...process.env, LOOKUP_API: api, LOOKUP_COUNT: String(opts.count), LOOKUP_WARMUP: String(opts.warmup), LOOKUP_SAMPLER: samplerDir || '' },
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 30 * 60 * 1000,
    });
    if (r.status !== 0) throw new Error(`lookup-own (${api}, ${samplerDir || 'no sampler'}) exited with ${r.status}: ${String(r.stderr).slice(-2000)}`);
    // The app's dump (part 1; cg.out-NN is what is left at exit) of the main thread (thread 01).
    const text = fs.readFileSync(path.join(dir, 'cg.out.1-01'), 'utf8');
    const m = /^summary: (\d+)$/m.exec(text) || /^totals: (\d+)$/m.exec(text);
    return Number(m[1]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    console.log('lookup-own: valgrind is not installed here; skipped');
    return;
  }
  const variants = [['none', null], ['uvscope', REPO], ...(opts.base ? [['base', opts.base]] : [])];
  const rows = [];
  for (const api of opts.apis) {
    const per = {};
    for (const [name, dir] of variants) per[name] = count(api, dir, opts) / opts.count;
    rows.push({ api, per, own: Object.fromEntries(variants.slice(1).map(([name]) => [name, per[name] - per.none])) });
  }
  if (opts.json) {
    console.log(JSON.stringify({ node: process.version, opts, rows }));
    return;
  }
  console.log(`node ${process.version}, flags: --single-threaded --hash-seed=1 --random-seed=1 ${opts.nodeFlags.join(' ')}; ${opts.count} lookups counted after ${opts.warmup}`);
  console.log('main-thread instructions per lookup on a fake dns answering at once; uvscope\'s own = with the sampler - without');
  for (const r of rows) {
    const own = Object.entries(r.own).map(([name, v]) => `${name} ${Math.round(v)}`).join(', ');
    console.log(`${r.api.padEnd(9)} without ${Math.round(r.per.none)}; own: ${own}`);
  }
}

main();
