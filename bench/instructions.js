'use strict';

// Instructions per request (user space, counted by valgrind's callgrind) of the HTTP server whose
// handler awaits (the tracer bench's app), without uvscope, with the agent (UVSCOPE_TRACER=off) and
// with the threadpool tracer armed (UVSCOPE_TRACER=on). A count, not a time: runs of the same code
// agree within about 1 %, where CPU time per request on a shared 2-core machine spreads by ±5 % per
// round (bench/tracer.js), so a change of a few percent shows here first. It is not CPU time: it
// leaves out the kernel (a third of this app's CPU) and cache misses, so bench/tracer.js stays the
// figure of record.
//
//   node bench/instructions.js [--requests 2000] [--warmup 3000] [--only without,off,armed]
//
// Each variant: the server starts under callgrind (about 50 times slower), serves --warmup
// requests (counted and thrown away: V8 optimizes the hot code meanwhile), then --requests
// requests, one at a time on one keep-alive connection (so every variant serves a request per
// turn of its loop, however slow it runs), and the count between the two is divided by the
// requests. The agent's own sample is pushed out of the way (UVSCOPE_INTERVAL_MS one hour), so the
// count is the cost per request alone; the tracer's first burst of route following (100 requests
// from arming) falls in the warm-up and no other comes: the armed tracer between bursts. Two
// variants run at once (2 CPUs). Needs valgrind: without it, says so and exits 0. Bounded by a
// watchdog.

const path = require('path');
const fs = require('fs');
const os = require('os');
const http = require('http');
const { spawn, execFileSync } = require('child_process');
const { cleanEnv, firstLine, stopChild, Children, watchdog } = require('../support/processes');

const REPO = path.resolve(__dirname, '..');
const REGISTER = path.join(REPO, 'register.js');
const SERVER = path.join(__dirname, 'fixtures', 'await-server.js');
const QUIET = { UVSCOPE_EXPORTERS: 'none', UVSCOPE_INTERVAL_MS: '3600000' };
const VARIANTS = [
  { name: 'without', env: null },
  { name: 'off', label: 'agent, tracer off', env: { ...QUIET, UVSCOPE_TRACER: 'off' } },
  { name: 'armed', label: 'tracer armed', env: { ...QUIET, UVSCOPE_TRACER: 'on' } },
];

function parseArgs(argv) {
  const opts = { requests: 2000, warmup: 3000, only: VARIANTS.map((v) => v.name) };
  const usage = 'node bench/instructions.js [--requests 2000] [--warmup 3000] [--only without,off,armed]';
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(requests|warmup|only)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]}: ${usage}`);
    const value = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'only') {
      opts.only = String(value).split(',');
      const unknown = opts.only.filter((n) => !VARIANTS.some((v) => v.name === n));
      if (unknown.length || !opts.only.length) throw new Error(`--only: names from ${VARIANTS.map((v) => v.name).join(', ')}`);
      continue;
    }
    const n = Number(value);
    if (!Number.isInteger(n) || n < 100 || n > 100000) throw new Error(`--${m[1]}: an integer from 100 to 100000`);
    opts[m[1]] = n;
  }
  return opts;
}

function hasValgrind() {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
    execFileSync('callgrind_control', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const children = new Children();

/** Requests one at a time on the agent's one keep-alive connection. */
async function serve(port, n, agent) {
  for (let i = 0; i < n; i++) {
    await new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
        res.resume();
        res.on('end', resolve);
      }).on('error', reject);
    });
  }
}

/** Instructions per request of one variant: { main, all } (main thread, every thread). */
async function measure(variant, opts, dir) {
  const out = path.join(dir, `callgrind.${variant.name}`);
  const env = cleanEnv(variant.env || {});
  const args = ['--tool=callgrind', '--separate-threads=yes', '--smc-check=all-non-file', `--callgrind-out-file=${out}`,
    process.execPath, ...(variant.env ? ['--require', REGISTER] : []), SERVER];
  const child = children.track(spawn('valgrind', args, { env, stdio: ['ignore', 'pipe', 'ignore'] }));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const port = Number(await firstLine(child, `${variant.name} server`));
    await serve(port, opts.warmup, agent);
    execFileSync('callgrind_control', ['--zero', String(child.pid)], { stdio: 'ignore' });
    await serve(port, opts.requests, agent);
    execFileSync('callgrind_control', ['--dump', String(child.pid)], { stdio: 'ignore' });
  } finally {
    agent.destroy();
    await stopChild(child);
  }
  // One file per thread for the dump (out.<dump>-<thread>); thread 01 is the main thread.
  const files = fs.readdirSync(dir).filter((f) => f.startsWith(`callgrind.${variant.name}.`)).sort();
  let main = 0;
  let all = 0;
  for (const f of files) {
    const m = /^(?:summary|totals):\s+(\d+)/m.exec(fs.readFileSync(path.join(dir, f), 'utf8'));
    if (!m) continue;
    all += Number(m[1]);
    if (/-0*1$/.test(f)) main += Number(m[1]);
  }
  if (!all || !main) throw new Error(`${variant.name}: no callgrind counts in ${dir} (${files.join(', ') || 'no files'})`);
  return { main: main / opts.requests, all: all / opts.requests };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!hasValgrind()) {
    console.log('instructions bench: valgrind (callgrind, callgrind_control) is not installed here; skipped');
    return;
  }
  const variants = VARIANTS.filter((v) => opts.only.includes(v.name));
  // Under callgrind about 8 ms a request: twice the requests, in pairs, plus starts.
  const budgetMs = Math.ceil(variants.length / 2) * ((opts.requests + opts.warmup) * 30 + 60000);
  watchdog('instructions bench', budgetMs, () => [...children]);
  console.log(`uvscope instructions per request: node ${process.version}, ${os.cpus().length} CPU(s); ` +
    `${opts.warmup} requests of warm-up, ${opts.requests} counted, one at a time on one keep-alive connection`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-instructions-'));
  const results = new Map();
  try {
    for (let i = 0; i < variants.length; i += 2) {
      const pair = variants.slice(i, i + 2);
      const counts = await Promise.all(pair.map((v) => measure(v, opts, dir)));
      pair.forEach((v, k) => results.set(v.name, counts[k]));
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  for (const v of variants) {
    const r = results.get(v.name);
    console.log(`${(v.label || v.name).padEnd(18)} main thread ${Math.round(r.main)}  all threads ${Math.round(r.all)}  instructions per request`);
  }
  const ratio = (a, b, k) => (results.has(a) && results.has(b) ? (results.get(a)[k] / results.get(b)[k]).toFixed(3) : null);
  for (const [a, b] of [['off', 'without'], ['armed', 'without'], ['armed', 'off']]) {
    const main = ratio(a, b, 'main');
    if (main) console.log(`ratio ${a} / ${b}: main thread ${main}, all threads ${ratio(a, b, 'all')}`);
  }
}

main().catch((err) => {
  console.error(err.stack);
  children.killAll();
  process.exit(1);
});
