'use strict';

// Instructions per request (user space, counted by valgrind's callgrind) of an HTTP server, with
// no agent and with each agent, next to each other. A count, not a time: CPU time per request on a
// shared 2-core machine spreads by ±30 % between variants (bench/peers.js), counts do not move
// with the load, so the agents can be ranked here. It is not CPU time: it leaves out the kernel
// and cache misses.
//
//   node bench/instructions.js [--servers hello,lookup] [--only none,uvscope,prom-client,otel]
//                              [--rates 5,20] [--seconds 30] [--warmup 1500] [--runs 1]
//                              [--base DIR] [--node-flags '--single-threaded --no-opt --no-maglev --hash-seed=1 --random-seed=1']
//
// Servers (bench/fixtures/): hello (hello-server.js), await (await-server.js: a handler with two
// awaits, the tracer bench's app), lookup (lookup-server.js: a handler that awaits and looks up
// localhost with dns.lookup, from /etc/hosts).
// Variants:
//   none         no agent
//   uvscope      --require register.js, defaults (1 s sampling, Prometheus exporter), the text
//                its endpoint serves at /metrics rendered every second in-process
//                (bench/fixtures/peers/uvscope-read.js, as in bench/peers.js)
//   tracer-off   the same with UVSCOPE_TRACER=off (the tracer's auto mode arms when the pool
//                is saturated or its threads starve for a CPU, as they can on a busy machine)
//   base         the same from another checkout (--base DIR): before and after a change, one run
//   prom-client  collectDefaultMetrics(), rendered every second (bench/fixtures/peers/prom-client.js)
//   otel         @opentelemetry/instrumentation-runtime-node on an SDK reader collecting every
//                second (bench/fixtures/peers/otel-runtime-node.js)
//   off, armed   uvscope with no exporter and its sample an hour away, tracer off / armed
//                (UVSCOPE_TRACER=on): the cost per request alone, for the tracer
//
// The agents' periodic work (a sample, a render, a 10 ms timer) runs by the wall clock, and
// callgrind slows the process about 50 times: counted over a number of requests served as fast as
// they go, it fell on however few requests a callgrind second held, and runs with an agent did not
// repeat. So each variant runs the same phases of fixed wall time (--seconds) at fixed request
// rates well below what callgrind sustains (--rates low,high; requests one at a time on one
// keep-alive connection, each sent at its time): the periodic work is the same in both phases and
// cancels in
//   per request  = (I_high - I_low) / (N_high - N_low)         (instructions I, requests N)
// and a third phase with no request gives the periodic work alone:
//   per second   = I_idle / seconds.
// That alone did not rank the agents: part of the clock-driven work follows the load (a busy loop
// under callgrind makes uvscope's event-loop timer fire 10 times as often, a sample's percentiles
// cost more with more distinct delays), and V8 compiles and collects on other threads at times
// set by the scheduler, so the main thread's share moved by tens of thousands of instructions a
// request between runs. What ranks (repeats within 0.03 to 2.4 % a variant; bench/README.md):
// - the request path: the main thread's instructions outside libuv's timers phase (every
//   instruction of a phase minus the inclusive count of uv__run_timers, read from the dump's call
//   graph by readCallgrind(); callgrind_annotate gives the same count):
//   the request's parsing, handler, awaits, lookups, writes and whatever an agent does on them
//   (diagnostics_channel subscribers, wrappers), with the GC and compilation they cause; the
//   agents' samples, renders and collections run from timers and are left out (printed apart:
//   "in timers", and per idle second);
// - with Node's --single-threaded --no-opt --no-maglev (--node-flags; every variant, no agent
//   too): V8 collects on the main thread, when the allocation asks for it, not when a helper
//   thread gets scheduled, and runs JavaScript in its interpreter and baseline code only: with the
//   optimizing compilers on, hot code was still being optimized after the warm-up, on the main
//   thread under --single-threaded, and whether that fell in the low or the high phase depended
//   on what else ran (an agent's timers heat shared code such as EventEmitter's), which moved a
//   variant's difference by up to 80k a request (Node 20) though each repeated; and V8's hash and
//   random seeds fixed (uvscope samples callers at random gaps). So the path is the unoptimized
//   cost of the request and of each agent's per-request work, GC included, for every variant
//   alike: it ranks the agents, it is not what an optimized default Node spends.
// - GC apart: V8's scavenges on the main thread run wherever an allocation finds the young
//   generation full, or from V8's scavenge task (run by Node's platform from the poll phase, so
//   always outside timers), so an agent whose timers allocate moved scavenges into the path or out
//   of it from run to run (a scavenge is 0.5 to 2 M instructions under an agent, a few a phase:
//   the path moved by several thousand a request). callgrind separates each GC entry point
//   (GC_ENTRIES: Heap::CollectGarbage and its kin, incremental marking, the scavenge and memory
//   reducer tasks, sweeping, unmapping) by its whole call chain (--separate-callers500), and
//   readCallgrind() reads the dump's call graph itself: a GC entry's inclusive count (its own
//   cost lines plus those after its calls= lines), the outermost only, is "in timers" when
//   uv__run_timers is on its chain, "on the path" otherwise. Printed per request: the path
//   without GC (the reading that repeats), GC on the path, GC in timers, and the path without GC
//   plus all of the main thread's GC per request (path and timers: the per-variant figure that
//   charges an agent the GC that grows with the requests, whichever allocation triggers it: its
//   young objects copied at each scavenge, its per-request allocations; the GC its timers cause
//   at a steady rate is the same in both phases and cancels); and the main thread's GC per idle
//   second. GC figures come in whole scavenges (the collections per phase are printed per run),
//   so they are coarser than the path without GC, which repeated within 1 % for every variant
//   (0.00 to 0.86 %, two runs, hello and lookup, Node 20 and 24; the path with its GC up to 2.2 %);
// A run whose uvscope tracer was armed during a rated phase (auto mode arms when a probe waits
// 250 ms, which callgrind's slowness causes) gives no per-request figure: printed, left out.
// Printed per server and variant: the path, the timers' part, the main thread and all threads per
// request, the timers and the main thread per idle second; then the GC split (above); each also
// minus no agent's of the same run ("added"); with --runs N the median and range over N fresh servers. Before each phase the server collects its heap in full (SIGUSR2,
// bench/fixtures/phase-signal.js), so a major GC does not land in one phase or the next by chance.
// The phases run in the order low, high, idle (the idle one last: V8's memory reducer collects
// after the load stops, which would otherwise move into the next phase). Before them --warmup
// requests, as fast as they go, let V8 optimize the hot code. Needs valgrind: without it, says so
// and exits 0. Bounded by a watchdog.

const path = require('path');
const fs = require('fs');
const os = require('os');
const http = require('http');
const { spawn, execFileSync } = require('child_process');
const { cleanEnv, stopChild, Children, watchdog } = require('../support/processes');

const REPO = path.resolve(__dirname, '..');
const FIXTURES = path.join(__dirname, 'fixtures');
const PEERS = path.join(FIXTURES, 'peers');
const PHASE_SIGNAL = path.join(FIXTURES, 'phase-signal.js');
const SERVERS = {
  hello: path.join(FIXTURES, 'hello-server.js'),
  await: path.join(FIXTURES, 'await-server.js'),
  lookup: path.join(FIXTURES, 'lookup-server.js'),
};
const QUIET = { UVSCOPE_EXPORTERS: 'none', UVSCOPE_INTERVAL_MS: '3600000' };
// The agents' clock-driven work an hour away: no sample, render or collection while counting.
const AWAY = { PEERS_READ_MS: '3600000' };
const uvscopeAt = (dir) => [path.join(dir, 'register.js'), path.join(PEERS, 'uvscope-read.js')];
const VARIANTS = [
  { name: 'none', label: 'no agent', preloads: () => [] },
  { name: 'uvscope', label: 'uvscope (defaults)', preloads: () => uvscopeAt(REPO), env: { UVSCOPE_PROMETHEUS_PORT: '0' } },
  { name: 'tracer-off', label: 'uvscope, tracer off', preloads: () => uvscopeAt(REPO), env: { UVSCOPE_PROMETHEUS_PORT: '0', UVSCOPE_TRACER: 'off' } },
  { name: 'base', label: 'uvscope, --base', preloads: (opts) => uvscopeAt(opts.base), env: { UVSCOPE_PROMETHEUS_PORT: '0' } },
  { name: 'prom-client', label: 'prom-client defaults', preloads: () => [path.join(PEERS, 'prom-client.js')] },
  { name: 'otel', label: 'OTel runtime-node', preloads: () => [path.join(PEERS, 'otel-runtime-node.js')] },
  { name: 'uvscope-quiet', quiet: true, label: 'uvscope, per request', preloads: () => uvscopeAt(REPO), env: { UVSCOPE_PROMETHEUS_PORT: '0', UVSCOPE_INTERVAL_MS: '3600000', ...AWAY } },
  { name: 'base-quiet', quiet: true, label: '--base, per request', preloads: (opts) => uvscopeAt(opts.base), env: { UVSCOPE_PROMETHEUS_PORT: '0', UVSCOPE_INTERVAL_MS: '3600000', ...AWAY } },
  { name: 'prom-client-quiet', quiet: true, label: 'prom-client, per req.', preloads: () => [path.join(PEERS, 'prom-client.js')], env: AWAY },
  { name: 'otel-quiet', quiet: true, label: 'OTel, per request', preloads: () => [path.join(PEERS, 'otel-runtime-node.js')], env: AWAY },
  { name: 'off', label: 'uvscope, quiet, tracer off', preloads: () => [path.join(REPO, 'register.js')], env: { ...QUIET, UVSCOPE_TRACER: 'off' } },
  { name: 'armed', label: 'uvscope, quiet, armed', preloads: () => [path.join(REPO, 'register.js')], env: { ...QUIET, UVSCOPE_TRACER: 'on' } },
];
const USAGE = 'node bench/instructions.js [--servers hello,lookup] [--only none,uvscope,prom-client,otel] [--phases low,high,idle] [--rates 5,20] [--seconds 30] [--warmup 1500] [--runs 1] [--base DIR] [--node-flags \'--single-threaded --no-opt --no-maglev --hash-seed=1 --random-seed=1\']';

function parseList(flag, value, known) {
  const list = String(value).split(',').filter(Boolean);
  const unknown = list.filter((n) => !known.includes(n));
  if (unknown.length || !list.length) throw new Error(`--${flag}: names from ${known.join(', ')}, got ${value}`);
  return list;
}

function intIn(flag, value, lo, hi) {
  const n = Number(value);
  if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`--${flag}: an integer from ${lo} to ${hi}, got ${value}`);
  return n;
}

function parseArgs(argv) {
  const opts = { nodeFlags: ['--single-threaded', '--no-opt', '--no-maglev', '--hash-seed=1', '--random-seed=1'], phases: ['low', 'high', 'idle'], burst: 0, rates: [5, 20], seconds: 30, warmup: 1500, runs: 1, base: null, servers: ['hello', 'lookup'], only: ['none', 'uvscope', 'prom-client', 'otel'] };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(rates|seconds|warmup|runs|only|servers|base|phases|burst|node-flags)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]}: ${USAGE}`);
    const value = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'only') opts.only = parseList('only', value, VARIANTS.map((v) => v.name));
    else if (m[1] === 'phases') opts.phases = parseList('phases', value, ['low', 'high', 'idle']);
    else if (m[1] === 'servers') opts.servers = parseList('servers', value, Object.keys(SERVERS));
    else if (m[1] === 'runs') opts.runs = intIn('runs', value, 1, 5);
    else if (m[1] === 'burst') opts.burst = intIn('burst', value, 100, 100000);
    else if (m[1] === 'seconds') opts.seconds = intIn('seconds', value, 5, 300);
    else if (m[1] === 'warmup') opts.warmup = intIn('warmup', value, 0, 100000);
    else if (m[1] === 'base') opts.base = path.resolve(value);
    else if (m[1] === 'node-flags') opts.nodeFlags = String(value).split(/\s+/).filter(Boolean);
    else {
      const rates = String(value).split(',').map((r) => intIn('rates', r, 1, 100));
      if (rates.length !== 2 || rates[0] >= rates[1]) throw new Error(`--rates: two request rates a second, low,high, got ${value}`);
      opts.rates = rates;
    }
  }
  if (opts.only.some((n) => n.startsWith('base')) && (!opts.base || !fs.existsSync(path.join(opts.base, 'register.js')))) {
    throw new Error('--only base needs --base DIR, a checkout of uvscope with its register.js');
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
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function get(port, agent) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
      res.resume();
      res.on('end', resolve);
    }).on('error', reject);
  });
}

// The server closes a keep-alive connection idle for 5 s of wall time (a slow phase change under
// valgrind on a loaded machine can take that long): the request is sent again once, on a new one.
async function request(port, agent) {
  try {
    await get(port, agent);
  } catch (err) {
    if (err.code !== 'ECONNRESET') throw err;
    await get(port, agent);
  }
}

/** Requests one at a time on the agent's one keep-alive connection, as fast as they go. */
async function serve(port, n, agent) {
  for (let i = 0; i < n; i++) await request(port, agent);
}

/**
 * Requests at `rate` a second for `seconds` of wall time, one at a time: request i is sent at
 * i / rate seconds (or when the one before it ends, if later). Returns the requests served and
 * how many were sent late (the server did not keep up with the rate).
 */
async function paced(port, rate, seconds, agent) {
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  let n = 0;
  let late = 0;
  for (;;) {
    const due = t0 + (n * 1000) / rate;
    if (due >= end) break;
    const now = performance.now();
    if (due > now) await sleep(due - now);
    else if (n > 0 && now - due > 1000 / rate) late++;
    await request(port, agent);
    n++;
  }
  const left = end - performance.now();
  if (left > 0) await sleep(left);
  return { n, late, seconds: (performance.now() - t0) / 1000 };
}

/** The server's stdout, line by line: next() resolves with the next line. */
function lines(child, name) {
  const queue = [];
  const waiting = [];
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) !== -1) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (waiting.length) waiting.shift().resolve(line);
      else queue.push(line);
    }
  });
  child.once('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`${name} exited (${code})`));
  });
  return {
    next: () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((resolve, reject) => waiting.push({ resolve, reject }))),
  };
}

// V8's garbage collection on the main thread: the functions through which it is entered (a
// collection, incremental marking's steps and jobs, the scavenge and memory-reducer tasks,
// sweeping and unmapping done on allocation). callgrind separates each of them by its whole call
// chain (--separate-callers500=...), so the dump tells whether uv__run_timers is on the stack
// when one runs: that is the split of GC between the request path and the timers.
const GC_ENTRIES = [
  'v8::internal::Heap::CollectGarbage*', 'v8::internal::Heap::CollectAllGarbage*', 'v8::internal::Heap::CollectAllAvailableGarbage*',
  'v8::internal::HeapAllocator::CollectGarbage*', 'v8::internal::Heap::StartIncrementalMarking*', 'v8::internal::Heap::FinalizeIncrementalMarking*',
  'v8::internal::Heap::HandleGCRequest*', 'v8::internal::IncrementalMarking::*', 'v8::internal::IncrementalMarkingJob::*',
  'v8::internal::MinorGCJob::*', 'v8::internal::ScavengeJob::*', 'v8::internal::MemoryReducer::*', 'v8::internal::Sweeper::*',
  'v8::internal::ArrayBufferSweeper::*', 'v8::internal::MemoryAllocator::Unmapper::*',
];
const GC_DEPTH = 500;
const globRe = (g) => new RegExp(`^${g.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
const GC_RE = GC_ENTRIES.map(globRe);
const isGC = (fn) => GC_RE.some((re) => re.test(fn));

/**
 * One callgrind dump (one thread) read whole: the total, the inclusive count of uv__run_timers
 * (libuv's timers phase: setTimeout/setInterval callbacks, native uv timers, what they call) and
 * the main thread's GC split by where it ran: { total, timers, gcPath, gcTimers, gcUnplaced }.
 * A function's inclusive count is its own cost lines plus the cost of its calls (the line after
 * each calls=); a GC entry counts when no other GC entry is among its callers (the outermost, so
 * nothing twice); it is in timers when uv__run_timers is among them, on the path otherwise
 * (I/O callbacks, immediates, V8's tasks run from Node's platform); unplaced (counted with the
 * path) when its chain does not reach uv_run.
 */
function readCallgrind(file) {
  const names = new Map();
  const costs = new Map();
  const called = new Map();
  let callee = null;
  let cur = null;
  let afterCalls = false;
  let total = 0;
  const nameOf = (v) => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(v);
    if (!m) return v;
    if (m[2] !== undefined) names.set(m[1], m[2]);
    return names.get(m[1]);
  };
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const c = line.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42) {
      // A cost line: position, then the one event (Ir; absent when 0).
      const v = Number(line.split(' ')[1] || 0);
      if (cur) cur[afterCalls ? 'calls' : 'self'] += v;
      afterCalls = false;
    } else if (line.startsWith('fn=')) {
      const name = nameOf(line.slice(3));
      cur = costs.get(name);
      if (!cur) costs.set(name, (cur = { self: 0, calls: 0 }));
      afterCalls = false;
    } else if (line.startsWith('cfn=')) callee = nameOf(line.slice(4));
    else if (line.startsWith('calls=')) {
      afterCalls = true;
      called.set(callee, (called.get(callee) || 0) + parseInt(line.slice(6), 10));
    }
    else if (line.startsWith('summary:') || line.startsWith('totals:')) total = Number(line.split(/\s+/)[1]);
  }
  const out = { total, timers: 0, gcPath: 0, gcTimers: 0, gcUnplaced: 0, gcUnseparated: 0, collections: 0 };
  for (const [name, cost] of costs) {
    // A separated function's name is its chain, innermost first: fn'caller'caller'...; a
    // recursion level shows as a number after the name ('2).
    const chain = name.split("'").filter((s) => !/^\d+$/.test(s));
    if (chain[0] === 'uv__run_timers') out.timers += cost.self + cost.calls;
    // Collections: calls into Heap::CollectGarbage, whatever entered the GC (on Node 24 a task or
    // HeapAllocator::CollectGarbage is the outermost entry).
    if (chain[0].startsWith('v8::internal::Heap::CollectGarbage(')) out.collections += called.get(name) || 0;
    if (!isGC(chain[0]) || chain.slice(1).some(isGC)) continue;
    // Not separated by callgrind (its pattern and this one disagree): where it ran is unknown.
    if (chain.length < 2) {
      out.gcUnseparated += cost.self + cost.calls;
      continue;
    }
    const incl = cost.self + cost.calls;
    if (chain.includes('uv__run_timers')) out.gcTimers += incl;
    else {
      out.gcPath += incl;
      if (!chain.includes('uv_run')) out.gcUnplaced += incl;
    }
  }
  return out;
}

/**
 * Instructions in the dump files written since `seen` (one per thread): { main, all, timers,
 * gcPath, gcTimers, gcUnplaced, gcUnseparated } (all but `all` the main thread's; timers: in
 * uv__run_timers, inclusive; GC as readCallgrind splits it).
 */
function readDump(dir, tag, seen) {
  const files = fs.readdirSync(dir).filter((f) => f.startsWith(`callgrind.${tag}.`) && !seen.has(f)).sort();
  const sum = { main: 0, all: 0, timers: 0, gcPath: 0, gcTimers: 0, gcUnplaced: 0, gcUnseparated: 0, collections: 0 };
  for (const f of files) {
    seen.add(f);
    // Files are out.<dump>-<thread>; thread 01 is the main thread.
    if (/-0*1$/.test(f)) {
      const t = readCallgrind(path.join(dir, f));
      sum.main += t.total;
      sum.all += t.total;
      for (const k of ['timers', 'gcPath', 'gcTimers', 'gcUnplaced', 'gcUnseparated', 'collections']) sum[k] += t[k];
    } else {
      const m = /^(?:summary|totals):\s+(\d+)/m.exec(fs.readFileSync(path.join(dir, f), 'utf8'));
      if (m) sum.all += Number(m[1]);
    }
  }
  if (!sum.all || !sum.main) throw new Error(`${tag}: no callgrind counts in ${dir} (${files.join(', ') || 'no new files'})`);
  return sum;
}

/**
 * One variant on one server: the phases low, high and idle, each { n, late, seconds, main, all }
 * (instructions of the main thread and of every thread).
 */
async function measure(job, opts, dir) {
  const { variant, server } = job;
  const tag = `${server}.${variant.name}.${job.run}`;
  const out = path.join(dir, `callgrind.${tag}`);
  const env = cleanEnv(variant.env || {});
  const preloads = [PHASE_SIGNAL, ...variant.preloads(opts)].flatMap((p) => ['--require', p]);
  const args = ['--tool=callgrind', '--separate-threads=yes', '--dump-instr=no', '--smc-check=all-non-file', `--callgrind-out-file=${out}`,
    ...GC_ENTRIES.map((f) => `--separate-callers${GC_DEPTH}=${f}`), process.execPath, '--expose-gc', ...opts.nodeFlags, ...preloads, SERVERS[server]];
  const child = children.track(spawn('valgrind', args, { env, stdio: ['ignore', 'pipe', 'ignore'] }));
  const stdout = lines(child, `${tag} server`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const phases = {};
  const tracer = [];
  try {
    const port = Number(await stdout.next());
    await serve(port, opts.warmup, agent);
    const seen = new Set(fs.readdirSync(dir).filter((f) => f.startsWith(`callgrind.${tag}.`)));
    // Quiet variants (their clock-driven work an hour away) count requests only.
    const wanted = opts.phases.filter((p) => !variant.quiet || p !== 'idle');
    if (opts.burst) {
      // --burst N: N requests as fast as they go, counted together (no phase at a rate).
      process.kill(child.pid, 'SIGUSR2');
      await stdout.next();
      execFileSync('callgrind_control', ['--zero', String(child.pid)], { stdio: 'ignore' });
      const t0 = performance.now();
      await serve(port, opts.burst, agent);
      execFileSync('callgrind_control', ['--dump', String(child.pid)], { stdio: 'ignore' });
      phases.burst = { n: opts.burst, late: 0, seconds: (performance.now() - t0) / 1000, ...readDump(dir, tag, seen) };
      if (!wanted.includes('idle')) wanted.length = 0;
      else wanted.splice(0, wanted.length, 'idle');
    }
    // uvscope's tracer armed during the warm-up (callgrind's slowness makes its probes wait):
    // the phases start once it has disarmed (it arms for 10 s), for at most 60 s.
    for (let waited = 0; waited < 60000; waited += 2000) {
      process.kill(child.pid, 'SIGUSR2');
      if (!/armed/.test(await stdout.next())) break;
      await sleep(2000);
    }
    const ran = [];
    for (const [name, rate] of [['low', opts.rates[0]], ['high', opts.rates[1]], ['idle', 0]].filter(([p]) => wanted.includes(p))) {
      ran.push(name);
      process.kill(child.pid, 'SIGUSR2');
      const ack = (await stdout.next()).split(' ');
      if (ack[0] !== 'gc') throw new Error(`${tag}: expected gc on stdout, got ${ack.join(' ')}`);
      if (ack.length > 1) tracer.push(ack.slice(1).join(' '));
      execFileSync('callgrind_control', ['--zero', String(child.pid)], { stdio: 'ignore' });
      const served = rate > 0 ? await paced(port, rate, opts.seconds, agent) : await sleep(opts.seconds * 1000).then(() => ({ n: 0, late: 0, seconds: opts.seconds }));
      execFileSync('callgrind_control', ['--dump', String(child.pid)], { stdio: 'ignore' });
      phases[name] = { ...served, ...readDump(dir, tag, seen) };
    }
    process.kill(child.pid, 'SIGUSR2');
    const ack = (await stdout.next()).split(' ');
    if (ack.length > 1) tracer.push(ack.slice(1).join(' '));
    // uvscope's tracer armings before each phase and after the last (auto mode arms for 10 s when
    // a probe waits 250 ms or more, which callgrind's slowness can cause): a phase it armed in is
    // not like the others.
    if (tracer.length) {
      phases.tracer = tracer;
      // Armed in a phase: armed when it began, or armed again before it ended.
      phases.armedIn = ran.filter((_, i) => /armed/.test(tracer[i]) || parseInt(tracer[i + 1], 10) > parseInt(tracer[i], 10));
    }
  } finally {
    agent.destroy();
    await stopChild(child);
  }
  return phases;
}

/** Per request and per second, main thread and all threads, from one measurement's phases. */
function figures(p) {
  // A rated phase during which uvscope's tracer was armed (its async hooks on) is not like the
  // other: no per-request figure from that run (printed, left out of the summary).
  const req = p.high && p.low && !(p.armedIn || []).some((x) => x === 'low' || x === 'high');
  const dn = req ? p.high.n - p.low.n : 0;
  const burst = (k) => (p.burst ? p.burst[k] / p.burst.n : null);
  // Per request from one dump key: (high - low) / requests, or a burst's per request.
  const per = (k) => (req ? (p.high[k] - p.low[k]) / dn : burst(k));
  const pathNoGC = (x) => x.main - x.timers - x.gcPath;
  return {
    reqPathNoGC: req ? (pathNoGC(p.high) - pathNoGC(p.low)) / dn : (p.burst ? pathNoGC(p.burst) / p.burst.n : null),
    reqGCPath: per('gcPath'),
    reqGCTimers: per('gcTimers'),
    reqPathAllGC: req ? (pathNoGC(p.high) + p.high.gcPath + p.high.gcTimers - pathNoGC(p.low) - p.low.gcPath - p.low.gcTimers) / dn
      : (p.burst ? (pathNoGC(p.burst) + p.burst.gcPath + p.burst.gcTimers) / p.burst.n : null),
    secGC: p.idle ? (p.idle.gcPath + p.idle.gcTimers) / p.idle.seconds : null,
    reqPath: req ? ((p.high.main - p.high.timers) - (p.low.main - p.low.timers)) / dn : (p.burst ? (p.burst.main - p.burst.timers) / p.burst.n : null),
    reqTimers: req ? (p.high.timers - p.low.timers) / dn : burst('timers'),
    reqMain: req ? (p.high.main - p.low.main) / dn : burst('main'),
    reqAll: req ? (p.high.all - p.low.all) / dn : burst('all'),
    secTimers: p.idle ? p.idle.timers / p.idle.seconds : null,
    secMain: p.idle ? p.idle.main / p.idle.seconds : null,
    secAll: p.idle ? p.idle.all / p.idle.seconds : null,
    late: (p.low ? p.low.late : 0) + (p.high ? p.high.late : 0),
  };
}

const KEYS = ['reqPath', 'reqTimers', 'reqMain', 'reqAll', 'secTimers', 'secMain', 'secAll', 'reqPathNoGC', 'reqGCPath', 'reqGCTimers', 'reqPathAllGC', 'secGC'];
const range = (xs) => [Math.min(...xs), Math.max(...xs)];
const med = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Per server, per variant: each figure over runs (median, range), and minus none's of the same run. */
function summarize(jobs, opts) {
  const rows = [];
  for (const server of opts.servers) {
    for (const name of opts.only) {
      const mine = jobs.filter((j) => j.server === server && j.variant.name === name && j.phases);
      if (!mine.length) continue;
      const none = (run) => jobs.find((j) => j.server === server && j.variant.name === 'none' && j.run === run && j.phases);
      const row = { server, variant: name, label: mine[0].variant.label, late: mine.reduce((a, j) => a + figures(j.phases).late, 0) };
      for (const k of KEYS) {
        const own = mine.map((j) => figures(j.phases)[k]).filter((x) => x !== null);
        const added = mine.filter((j) => none(j.run) && figures(j.phases)[k] !== null && figures(none(j.run).phases)[k] !== null)
          .map((j) => figures(j.phases)[k] - figures(none(j.run).phases)[k]);
        row[k] = own.length ? { median: med(own), range: range(own), added: added.length ? med(added) : null, addedRange: added.length ? range(added) : null } : null;
      }
      rows.push(row);
    }
  }
  return rows;
}

function print(rows, opts) {
  const k = (n) => `${Math.round(n / 100) / 10}k`;
  const m = (n) => `${Math.round(n / 1e4) / 100}M`;
  const cell = (f, fmt) => {
    if (!f) return '';
    const rg = (r) => (opts.runs > 1 ? ` (${fmt(r[0])}..${fmt(r[1])})` : '');
    const own = `${fmt(f.median)}${rg(f.range)}`;
    return f.added === null ? own : `${own} ${f.added >= 0 ? '+' : ''}${fmt(f.added)}${rg(f.addedRange)}`;
  };
  for (const server of opts.servers) {
    console.log(`\n${server} server (bench/fixtures/${path.basename(SERVERS[server])}): instructions per request ((high - low) / requests) and per idle second; each: the variant's, then added to no agent's`);
    console.log(`${'variant'.padEnd(22)} ${'per request, path'.padStart(30)} ${'per request, in timers'.padStart(30)} ${'per request, main'.padStart(30)} ${'per request, all'.padStart(30)} ${'per second, timers'.padStart(26)} ${'per second, main'.padStart(26)}`);
    for (const r of rows.filter((x) => x.server === server)) {
      console.log(`${r.label.padEnd(22)} ${cell(r.reqPath, k).padStart(30)} ${cell(r.reqTimers, k).padStart(30)} ${cell(r.reqMain, k).padStart(30)} ${cell(r.reqAll, k).padStart(30)} ${cell(r.secTimers, m).padStart(26)} ${cell(r.secMain, m).padStart(26)}${r.late ? `  (${r.late} requests late)` : ''}`);
    }
    console.log(`${server} server, GC split (main thread: V8's collections, marking, sweeping; on the path = outside uv__run_timers): per request, the variant's, then added to no agent's`);
    console.log(`${'variant'.padEnd(22)} ${'path without GC'.padStart(30)} ${'GC on the path'.padStart(30)} ${'GC in timers'.padStart(30)} ${'path w/o GC + all GC'.padStart(30)} ${'GC per idle second'.padStart(26)}`);
    for (const r of rows.filter((x) => x.server === server)) {
      console.log(`${r.label.padEnd(22)} ${cell(r.reqPathNoGC, k).padStart(30)} ${cell(r.reqGCPath, k).padStart(30)} ${cell(r.reqGCTimers, k).padStart(30)} ${cell(r.reqPathAllGC, k).padStart(30)} ${cell(r.secGC, m).padStart(26)}`);
    }
    for (const q of ['-quiet', '']) {
      const uv = rows.find((x) => x.server === server && x.variant === `uvscope${q}`);
      const pc = rows.find((x) => x.server === server && x.variant === `prom-client${q}`);
      for (const [key, what] of [['reqPath', 'path: main thread outside timers'], ['reqPathNoGC', 'path without GC'], ['reqPathAllGC', 'path without GC + all GC']]) {
        if (!(uv && pc && uv[key] && pc[key] && uv[key].added !== null && pc[key].added !== null)) continue;
        const [uvLo, uvHi] = uv[key].addedRange;
        const [pcLo, pcHi] = pc[key].addedRange;
        const verdict = uvHi <= pcLo ? 'no more than' : uvLo > pcHi ? 'more than' : 'within the runs\' spread of';
        console.log(`per request${q ? ', clock-driven work away' : ''} (${what}): uvscope adds ${verdict} prom-client's defaults ` +
          `(${k(uv[key].added)} (${k(uvLo)}..${k(uvHi)}) vs ${k(pc[key].added)} (${k(pcLo)}..${k(pcHi)}))`);
      }
    }
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!hasValgrind()) {
    console.log('instructions bench: valgrind (callgrind, callgrind_control) is not installed here; skipped');
    return;
  }
  const jobs = [];
  for (let run = 0; run < opts.runs; run++) {
    for (const server of opts.servers) {
      for (const name of opts.only) jobs.push({ run, server, variant: VARIANTS.find((v) => v.name === name) });
    }
  }
  // Under callgrind up to ~40 ms a request of warm-up, ~60 s to start an agent, then the three
  // phases: in pairs.
  const budgetMs = Math.ceil(jobs.length / 2) * ((opts.warmup + opts.burst) * 60 + opts.phases.length * opts.seconds * 1000 + 120000);
  watchdog('instructions bench', budgetMs, () => [...children]);
  console.log(`instructions: node ${process.version}, ${os.cpus().length} CPU(s), load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; ` +
    `${opts.warmup} requests of warm-up, then ${opts.burst ? `${opts.burst} requests as fast as they go${opts.phases.includes('idle') ? `, ${opts.seconds} s idle` : ''}` : `phases of ${opts.seconds} s: ${opts.phases.map((p) => (p === 'idle' ? 'idle' : `${p} ${opts.rates[p === 'low' ? 0 : 1]} req/s`)).join(', ')}`}, ` +
    `one request at a time on one keep-alive connection; ${opts.runs} run(s); node flags: ${opts.nodeFlags.join(' ') || 'none'}${opts.base ? `; base: ${opts.base}` : ''}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-instructions-'));
  try {
    for (let i = 0; i < jobs.length; i += 2) {
      const pair = jobs.slice(i, i + 2);
      const results = await Promise.all(pair.map((j) => measure(j, opts, dir)));
      pair.forEach((j, n) => {
        j.phases = results[n];
        const f = figures(j.phases);
        const p = j.phases;
        const ph = ['burst', 'low', 'high', 'idle'].filter((x) => p[x]).map((x) => `${x} ${p[x].n} req ${p[x].seconds.toFixed(2)} s ${p[x].main} main ${p[x].all} all`).join(', ');
        console.log(`  ${j.server} ${j.variant.name} run ${j.run + 1}: ${ph}; ` +
          `per request ${f.reqPath === null ? "-" : Math.round(f.reqPath)} outside timers + ${f.reqTimers === null ? "-" : Math.round(f.reqTimers)} in timers = ${f.reqMain === null ? "-" : Math.round(f.reqMain)} main / ${f.reqAll === null ? "-" : Math.round(f.reqAll)} all, per second ${f.secMain === null ? "-" : Math.round(f.secMain)} / ${f.secAll === null ? "-" : Math.round(f.secAll)}${f.late ? `, ${f.late} late` : ''}` +
          `; GC per request ${f.reqGCPath === null ? '-' : Math.round(f.reqGCPath)} on the path + ${f.reqGCTimers === null ? '-' : Math.round(f.reqGCTimers)} in timers (path without GC ${f.reqPathNoGC === null ? '-' : Math.round(f.reqPathNoGC)}), collections ${['burst', 'low', 'high', 'idle'].filter((x) => p[x]).map((x) => `${x} ${p[x].collections}`).join(', ')}` +
          `${['burst', 'low', 'high', 'idle'].some((x) => p[x] && (p[x].gcUnplaced || p[x].gcUnseparated)) ? `; GC not placed: ${['burst', 'low', 'high', 'idle'].filter((x) => p[x]).map((x) => `${x} ${p[x].gcUnplaced} unplaced ${p[x].gcUnseparated} unseparated`).join(', ')}` : ''}` +
          `${p.tracer ? `; tracer armings before low, high, idle, after: ${p.tracer.join(', ')}` : ''}` +
          `${p.armedIn && p.armedIn.length ? `; tracer armed in ${p.armedIn.join(', ')}${p.armedIn.some((x) => x !== 'idle') ? ': no per-request figure from this run' : ''}` : ''}`);
      });
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const rows = summarize(jobs, opts);
  print(rows, opts);
  if (process.env.UVSCOPE_BENCH_JSON) fs.writeFileSync(process.env.UVSCOPE_BENCH_JSON, JSON.stringify({ node: process.version, opts, jobs: jobs.map((j) => ({ run: j.run, server: j.server, variant: j.variant.name, phases: j.phases })) }, null, 1));
  const ratio = (a, b, key) => opts.servers.map((server) => {
    const x = rows.find((r) => r.server === server && r.variant === a);
    const y = rows.find((r) => r.server === server && r.variant === b);
    return x && y && x[key] && y[key] ? `${server} ${(x[key].median / y[key].median).toFixed(3)}` : null;
  }).filter(Boolean).join(', ');
  for (const [a, b] of [['off', 'none'], ['armed', 'none'], ['armed', 'off']]) {
    if (opts.only.includes(a) && opts.only.includes(b)) console.log(`ratio ${a} / ${b} per request: main thread ${ratio(a, b, 'reqMain')}; all threads ${ratio(a, b, 'reqAll')}`);
  }
}

main().catch((err) => {
  console.error(err.stack);
  children.killAll();
  process.exit(1);
});
