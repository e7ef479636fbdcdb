'use strict';

// bench/peers.js's RSS figure alone, so it can be repeated in a few minutes: per round the hello
// server with no agent, with uvscope, with prom-client (the same preloads as peers.js:
// bench/fixtures/peers/), and with `--before CHECKOUT` uvscope from another checkout, one after
// the other in rotated order, each on CPU 1 with the load generator on CPU 0, 1 s of warm-up
// and `--seconds` at `--rate` req/s; its RSS (VmRSS) right after, as peers.js reads it, and its
// anonymous and file-backed parts (/proc/<pid>/status RssAnon, RssFile). Printed: medians and
// range over rounds, each added to no agent's of the same round, and uvscope's against
// prom-client's.
//   node bench/peers-rss.js [--rounds 5] [--seconds 4] [--rate 1000] [--node PATH] [--before DIR] [--json]
// Bounded: rounds x variants x (seconds + ~2 s): ~1.5 min at the defaults (watchdog: 2x + 30 s).

const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const { median } = require('./fixtures/stats');
const { scrubEnv, stopChild, serverPort, Children, watchdog } = require('../support/processes');

const REPO = path.resolve(__dirname, '..');
const SERVER = path.join(__dirname, 'fixtures', 'hello-server.js');
const PEERS = path.join(__dirname, 'fixtures', 'peers');
const LOAD = path.join(PEERS, 'load.js');

function parseArgs(argv) {
  const opts = { rounds: 5, seconds: 4, rate: 1000, node: process.execPath, before: null, json: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--json') { opts.json = true; continue; }
    if (argv[i] === '--help' || argv[i] === '-h') {
      console.log('usage: node bench/peers-rss.js [--rounds 5] [--seconds 4] [--rate 1000] [--node PATH] [--before DIR] [--json]');
      process.exit(0);
    }
    const m = /^--(rounds|seconds|rate|node|before)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]} (try --help)`);
    const raw = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'node' || m[1] === 'before') {
      if (!raw || !fs.existsSync(raw)) throw new Error(`--${m[1]} needs an existing path, got ${raw}`);
      opts[m[1]] = path.resolve(raw);
      continue;
    }
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${m[1]} needs a positive integer, got ${raw}`);
    opts[m[1]] = n;
  }
  return opts;
}

function variants(opts) {
  const uvscope = (dir) => [path.join(dir, 'register.js'), path.join(dir, 'bench', 'fixtures', 'peers', 'uvscope-read.js')];
  const list = [
    { id: 'none', preloads: [] },
    { id: 'uvscope', preloads: uvscope(REPO), env: { UVSCOPE_PROMETHEUS_PORT: '0' } },
    { id: 'prom-client', preloads: [path.join(PEERS, 'prom-client.js')] },
  ];
  if (opts.before) list.push({ id: 'uvscope-before', preloads: uvscope(opts.before), env: { UVSCOPE_PROMETHEUS_PORT: '0' } });
  return list;
}

function rss(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => {
    const m = new RegExp(`${name}:\\s+(\\d+) kB`).exec(status);
    return m ? Number(m[1]) / 1024 : NaN;
  };
  return { rssMB: kb('VmRSS'), anonMB: kb('RssAnon'), fileMB: kb('RssFile') };
}

const children = new Children();
const cleanEnv = (extra) => scrubEnv(extra, (k) => k.startsWith('UVSCOPE_') || k.startsWith('OTEL_') || k.startsWith('DD_'));

function runLoad(port, seconds, opts) {
  const env = cleanEnv({ LOAD_URL: `http://127.0.0.1:${port}/`, LOAD_SECONDS: String(seconds), LOAD_RATE: String(opts.rate), LOAD_CONNECTIONS: '10' });
  const child = children.track(spawn('taskset', ['-c', '0', process.execPath, LOAD], { env, stdio: ['ignore', 'pipe', 'inherit'] }));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop())) : reject(new Error(`load generator exited with ${code}`))));
  });
}

async function measureOne(variant, opts) {
  const args = ['-c', '1', opts.node];
  for (const p of variant.preloads) args.push('--require', p);
  args.push(SERVER, '0');
  const child = children.track(spawn('taskset', args, { env: cleanEnv(variant.env), stdio: ['ignore', 'pipe', 'pipe'] }));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  try {
    const port = await serverPort(child, { name: `${variant.id} server`, timeoutMs: 20000, detail: () => `\n${stderr}` });
    await runLoad(port, 1, opts);
    const load = await runLoad(port, opts.seconds, opts);
    if (load.errors || load.non2xx) throw new Error(`${variant.id}: ${load.errors} errors, ${load.non2xx} non-2xx`);
    return rss(child.pid);
  } finally {
    await stopChild(child, { signal: 'SIGTERM', graceMs: 5000 });
  }
}

async function measure(opts) {
  const list = variants(opts);
  const rounds = [];
  for (let round = 0; round < opts.rounds; round++) {
    const byId = {};
    for (let i = 0; i < list.length; i++) {
      const v = list[(i + round) % list.length];
      byId[v.id] = await measureOne(v, opts);
    }
    rounds.push(byId);
  }
  const rows = list.map((v) => {
    const pick = (k) => rounds.map((r) => r[v.id][k]);
    const added = (k) => rounds.map((r) => r[v.id][k] - r.none[k]);
    const stat = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
    return {
      id: v.id,
      rssMB: stat(pick('rssMB')),
      addedMB: stat(added('rssMB')),
      addedAnonMB: stat(added('anonMB')),
      addedFileMB: stat(added('fileMB')),
    };
  });
  return { node: opts.node, rounds, rows };
}

if (require.main === module) {
  const opts = parseArgs(process.argv.slice(2));
  const stop = watchdog('bench/peers-rss.js', (2 * opts.rounds * variants(opts).length * (opts.seconds + 2) + 30) * 1000, () => [...children]);
  measure(opts).then((result) => {
    clearTimeout(stop);
    if (opts.json) {
      console.log(JSON.stringify(result, null, 2));
      return;
    }
    const f = (s) => `${s.median.toFixed(1)} (${s.min.toFixed(1)}..${s.max.toFixed(1)})`;
    console.log(`node ${opts.node}, ${opts.rounds} rounds, ${opts.rate} req/s for ${opts.seconds} s after 1 s of warm-up; RSS right after (MB), median (range)`);
    console.log(`${'variant'.padEnd(16)} ${'RSS'.padStart(18)} ${'added'.padStart(18)} ${'added anon'.padStart(18)} ${'added file'.padStart(18)}`);
    for (const r of result.rows) {
      console.log(`${r.id.padEnd(16)} ${f(r.rssMB).padStart(18)} ${(r.id === 'none' ? '' : f(r.addedMB)).padStart(18)} ${(r.id === 'none' ? '' : f(r.addedAnonMB)).padStart(18)} ${(r.id === 'none' ? '' : f(r.addedFileMB)).padStart(18)}`);
    }
    const u = result.rows.find((r) => r.id === 'uvscope');
    const p = result.rows.find((r) => r.id === 'prom-client');
    console.log(`uvscope's added RSS minus prom-client's (medians): ${(u.addedMB.median - p.addedMB.median).toFixed(2)} MB`);
  }, (err) => {
    clearTimeout(stop);
    console.error(err);
    process.exitCode = 1;
  });
}

module.exports = { measure };
