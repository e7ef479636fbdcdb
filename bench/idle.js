'use strict';

// Idle CPU only: bench/peers.js's idle figure without its load phase, so that it can be repeated
// on every major in a few minutes.
//
//   node bench/idle.js [--rounds 3] [--idle 30] [--settle 2] [--node /path/to/node]
//                      [--variants none,uvscope,prom-client] [--before /path/to/another/checkout]
//
// Per round, the variants (the same preloads as bench/peers.js: none, uvscope with its defaults and
// its registry rendered every second, prom-client's defaults rendered every second, OTel
// runtime-node collected every second; with --before, "uvscope-before": the same as uvscope from
// another checkout, e.g. main in a worktree, for a before/after in one run) start together on CPU 1 (taskset) with
// bench/fixtures/hello-server.js, get a short warm-up (100 requests each, then --settle seconds),
// and idle together for --idle seconds; each one's CPU time over that window, summed over all its threads
// (/proc/<pid>/task/*/schedstat, ns), scaled to a minute, is its idle CPU per minute. Printed per
// variant: the median over rounds, the range, and uvscope's figure against each other's.
// --settle 60 measures after V8 has compiled what a sample runs (in the first minute V8's helper
// threads compile the agent's code, run once a second, tier by tier: on Node 20 more CPU than the
// sample's own), the idle of a process that has run a while.
// Also printed per variant: the main thread's share of that CPU and its wake-ups a second
// (voluntary context switches of the main thread, /proc/<pid>/status), the rest being V8's
// helper threads (GC, the optimizing compiler) and the pool's.
// Bounded: rounds x (idle + settle + ~2 s); a watchdog ends the run at twice that plus 30 s.

const fs = require('fs');
const path = require('path');
const http = require('http');
const { spawn, spawnSync } = require('child_process');
const { median, machine } = require('./fixtures/stats');
const { scrubEnv, stopChild, serverPort, Children, processCpuNs, watchdog } = require('../support/processes');

const REPO = path.resolve(__dirname, '..');
const SERVER = path.join(__dirname, 'fixtures', 'hello-server.js');
const PEERS = path.join(__dirname, 'fixtures', 'peers');
const SERVER_CPU = '1';

const VARIANTS = {
  none: { preloads: [] },
  uvscope: { preloads: [path.join(REPO, 'register.js'), path.join(PEERS, 'uvscope-read.js')], env: { UVSCOPE_PROMETHEUS_PORT: '0' } },
  'prom-client': { preloads: [path.join(PEERS, 'prom-client.js')] },
  otel: { preloads: [path.join(PEERS, 'otel-runtime-node.js')] },
};

function parseArgs(argv) {
  const opts = { rounds: 3, idle: 30, settle: 2, node: process.execPath, variants: ['none', 'uvscope', 'prom-client'] };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(rounds|idle|settle|node|variants|before)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]} (usage: node bench/idle.js [--rounds 3] [--idle 30] [--settle 2] [--node PATH] [--variants none,uvscope,prom-client,otel])`);
    const raw = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'before') {
      if (!raw || !fs.existsSync(path.join(raw, 'register.js'))) throw new Error(`--before needs a uvscope checkout, got ${raw}`);
      VARIANTS['uvscope-before'] = { ...VARIANTS.uvscope, preloads: [path.join(raw, 'register.js'), path.join(raw, 'bench', 'fixtures', 'peers', 'uvscope-read.js')] };
      opts.before = raw;
    } else if (m[1] === 'node') {
      if (!raw || !fs.existsSync(raw)) throw new Error(`--node needs the path of a node binary, got ${raw}`);
      opts.node = raw;
    } else if (m[1] === 'variants') {
      opts.variants = raw.split(',');
      for (const v of opts.variants) if (!VARIANTS[v]) throw new Error(`unknown variant ${v} (${Object.keys(VARIANTS).join(', ')})`);
    } else {
      const n = Number(raw);
      if (!Number.isInteger(n) || n < 1) throw new Error(`--${m[1]} needs a positive integer, got ${raw}`);
      if (m[1] === 'idle' && n < 30) throw new Error(`--idle needs 30 seconds or more, got ${raw}`);
      opts[m[1]] = n;
    }
  }
  if (opts.before && !opts.variants.includes('uvscope-before')) opts.variants.splice(opts.variants.indexOf('uvscope') + 1, 0, 'uvscope-before');
  return opts;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The process's CPU (ns, all threads), its main thread's, and the main thread's voluntary switches. */
function reading(pid) {
  const main = Number(fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'latin1').split(' ')[0]);
  const m = /voluntary_ctxt_switches:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'latin1'));
  return { all: processCpuNs(pid), main, switches: m ? Number(m[1]) : NaN };
}
const children = new Children();

function cleanEnv(extra) {
  return scrubEnv(extra, (k) => k.startsWith('UVSCOPE_') || k.startsWith('DD_') || k.startsWith('OTEL_'));
}

async function start(id, opts) {
  const v = VARIANTS[id];
  const args = ['-c', SERVER_CPU, opts.node];
  for (const p of v.preloads) args.push('--require', p);
  args.push(SERVER, '0');
  const child = children.track(spawn('taskset', args, { env: cleanEnv(v.env || {}), stdio: ['ignore', 'pipe', 'pipe'] }));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const port = await serverPort(child, { name: `${id} server`, timeoutMs: 20000, detail: () => `\n${stderr}` });
  return { id, child, port };
}

/** 100 sequential requests on one keep-alive connection: the server has served something. */
async function warm(port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < 100; i++) {
    await new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, agent }, (res) => res.resume().on('end', resolve)).on('error', reject);
    });
  }
  agent.destroy();
}

async function round(opts) {
  const up = [];
  try {
    for (const id of opts.variants) up.push(await start(id, opts));
    for (const u of up) await warm(u.port);
    await sleep(opts.settle * 1000);
    const r0 = up.map((u) => reading(u.child.pid));
    await sleep(opts.idle * 1000);
    const r1 = up.map((u) => reading(u.child.pid));
    const perMinute = (ns) => (ns / 1e6) * (60 / opts.idle);
    return up.map((u, k) => ({
      id: u.id,
      msPerMinute: perMinute(r1[k].all - r0[k].all),
      mainMsPerMinute: perMinute(r1[k].main - r0[k].main),
      wakeupsPerSecond: (r1[k].switches - r0[k].switches) / opts.idle,
    }));
  } finally {
    await Promise.all(up.map((u) => stopChild(u.child, { signal: 'SIGTERM', graceMs: 5000 })));
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (spawnSync('taskset', ['-c', '0', 'true']).status !== 0) throw new Error('bench/idle.js needs taskset (util-linux)');
  watchdog('bench/idle.js', 2 * opts.rounds * (opts.idle + opts.settle + 2) * 1000 + 30000, () => children);
  const before = machine();
  const nodeVersion = spawnSync(opts.node, ['-v'], { encoding: 'utf8' }).stdout.trim();
  const runs = new Map(opts.variants.map((id) => [id, []]));
  const mains = new Map(opts.variants.map((id) => [id, []]));
  const wakeups = new Map(opts.variants.map((id) => [id, []]));
  for (let r = 0; r < opts.rounds; r++) {
    for (const x of await round(opts)) {
      runs.get(x.id).push(x.msPerMinute);
      mains.get(x.id).push(x.mainMsPerMinute);
      wakeups.get(x.id).push(x.wakeupsPerSecond);
    }
  }
  console.log(`${before.date}, servers on node ${nodeVersion}, ${before.cpus} CPUs; load ${before.load} before, ${machine().load} after`);
  console.log(`${opts.rounds} rounds, all variants idle together on CPU ${SERVER_CPU} for ${opts.idle} s from ${opts.settle} s after their warm-up; idle CPU (all threads) in ms per minute: median (range)`);
  const med = {};
  for (const [id, xs] of runs) {
    med[id] = median(xs);
    console.log(`${id.padEnd(12)} ${med[id].toFixed(0).padStart(6)} (${Math.min(...xs).toFixed(0)}..${Math.max(...xs).toFixed(0)})  rounds: ${xs.map((x) => x.toFixed(0)).join(' ')}`);
  }
  console.log('main thread: ms per minute, median (range); its wake-ups a second, median');
  for (const [id, xs] of mains) {
    const w = wakeups.get(id);
    console.log(`${id.padEnd(12)} ${median(xs).toFixed(0).padStart(6)} (${Math.min(...xs).toFixed(0)}..${Math.max(...xs).toFixed(0)})  wake-ups/s ${median(w).toFixed(1)}`);
  }
  if (med.uvscope !== undefined) {
    for (const id of Object.keys(med).filter((x) => x !== 'uvscope' && x !== 'none')) {
      console.log(`uvscope / ${id}: ${(med.uvscope / med[id]).toFixed(2)}`);
    }
  }
}

main().catch((err) => {
  console.error(err);
  children.killAll();
  process.exit(1);
});
