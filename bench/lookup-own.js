'use strict';

// Instructions of uvscope's own work per DNS lookup (the wrapper, the slot model, the name's
// figures), counted by valgrind's callgrind on the main thread: the lookups of
// bench/fixtures/lookup-own.js on a fake dns module that answers at once, with the DNS sampler
// minus without it, per lookup. No getaddrinfo, no agent, no timer: the lookups' path alone.
//
//   node bench/lookup-own.js [--apis promises,callback] [--count 5000] [--warmup 3000]
//                            [--base DIR] [--node-flags '--no-opt --no-maglev'] [--bytes] [--json]
//
// --node-flags: for every child (default '--no-opt --no-maglev': V8's interpreter and baseline
// code, as bench/instructions.js's path; '' for V8's defaults, then --count 20000 --warmup 20000
// so that the path is optimized). --base DIR: the sampler of another checkout too (before and
// after a change). Always with --single-threaded --hash-seed=1 --random-seed=1 (V8 compiles and
// collects on the main thread; callers sampled at the same random gaps). One valgrind at a time.
// --bytes: the bytes allocated per lookup instead of instructions (no valgrind: the young
// generation's growth over the counted lookups, with a 64 MiB semi-space so that no GC runs among
// them; a run where one did gives no figure), the same variants and APIs, own = with - without.

const path = require('path');
const fs = require('fs');
const os = require('os');
const { execFileSync, spawnSync } = require('child_process');

const REPO = path.resolve(__dirname, '..');
const APP = path.join(__dirname, 'fixtures', 'lookup-own.js');

function parseArgs(argv) {
  const opts = { apis: ['promises', 'callback'], count: 5000, warmup: 3000, base: null, nodeFlags: ['--no-opt', '--no-maglev'], json: false, bytes: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--json' || argv[i] === '--bytes') {
      opts[argv[i].slice(2)] = true;
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

// Bytes the counted lookups allocated (the fixture's LOOKUP_BYTES mode), or null if a GC ran among them.
function bytes(api, samplerDir, opts) {
  const r = spawnSync(process.execPath, ['--expose-gc', '--min-semi-space-size=64', '--max-semi-space-size=64', '--single-threaded', '--hash-seed=1', '--random-seed=1', ...opts.nodeFlags, APP], {
    env: { ...process.env, LOOKUP_API: api, LOOKUP_COUNT: String(opts.count), LOOKUP_WARMUP: String(opts.warmup), LOOKUP_SAMPLER: samplerDir || '', LOOKUP_BYTES: '1' },
    encoding: 'utf8',
    timeout: 5 * 60 * 1000,
  });
  if (r.status !== 0) throw new Error(`lookup-own --bytes (${api}, ${samplerDir || 'no sampler'}) exited with ${r.status}: ${String(r.stderr).slice(-2000)}`);
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  return out.gcs === 0 ? out.bytes : null;
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const variants = [['none', null], ['uvscope', REPO], ...(opts.base ? [['base', opts.base]] : [])];
  if (opts.bytes) {
    const rows = opts.apis.map((api) => {
      const per = {};
      for (const [name, dir] of variants) {
        const b = bytes(api, dir, opts);
        per[name] = b === null ? null : b / opts.count;
      }
      return { api, per, own: Object.fromEntries(variants.slice(1).map(([name]) => [name, per[name] === null || per.none === null ? null : per[name] - per.none])) };
    });
    if (opts.json) console.log(JSON.stringify({ node: process.version, opts, bytes: rows }));
    else {
      console.log(`node ${process.version}, flags: ${opts.nodeFlags.join(' ')}; bytes allocated per lookup, ${opts.count} lookups after ${opts.warmup}; uvscope's own = with the sampler - without`);
      for (const r of rows) {
        const own = Object.entries(r.own).map(([name, v]) => `${name} ${v === null ? 'a GC ran: no figure' : v.toFixed(0)}`).join(', ');
        console.log(`${r.api.padEnd(9)} without ${r.per.none === null ? '-' : r.per.none.toFixed(0)}; own: ${own}`);
      }
    }
    return;
  }
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    console.log('lookup-own: valgrind is not installed here; skipped');
    return;
  }
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
