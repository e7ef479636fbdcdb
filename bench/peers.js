'use strict';

// uvscope next to its peers, in one run: an HTTP hello world with no agent, with uvscope, and with
// each peer's runtime metrics, alternated round by round.
//
//   node bench/peers.js [--rounds 3] [--seconds 4] [--idle 30] [--rate 1000] [--connections 10]
//                       [--node /path/to/node] [--json]
//
// Rows (bench/fixtures/peers/*.js are the preloads):
//   none            no agent
//   uvscope         --require register.js with its defaults (1 s sampling, Prometheus exporter),
//                   its /metrics text rendered every second in-process (as a 1 s scrape would)
//   uvscope-tracer  the same with UVSCOPE_TRACER=on (the threadpool tracer armed), when the code
//                   on this checkout has it; otherwise the row is printed as an empty slot
//   prom-client     collectDefaultMetrics(), rendered every second in-process
//   otel            @opentelemetry/instrumentation-runtime-node on an SDK MeterProvider whose
//                   reader collects every second (SDK 3 + runtime-node 0.37 on Node 22.15+,
//                   SDK 2 + 0.36 on Node 20)
//   dd-trace        dd-trace runtime metrics only (plugins off; dd-trace 6 on Node 22+, 5 on 20),
//                   DogStatsD to a UDP socket of this bench; dd-trace flushes every 10 s
//
// The servers run on --node (default: this Node), so one checkout measures every major. Per
// round, each variant in turn: the server (bench/fixtures/hello-server.js) starts pinned to CPU 1
// (taskset), its startup is the time from spawn to its port on stdout; a load generator
// (bench/fixtures/peers/load.js, autocannon, on this Node) pinned to CPU 0 sends --rate req/s for
// 1 s of warm-up and then --seconds measured; the server's CPU time over the measured window (all
// its threads, /proc/<pid>/task/*/schedstat, ns) divided by the requests served is the CPU per
// request; its RSS is read right after. The server then stays up, idle. Once every variant of the
// round has served its load, all of them idle together for --idle seconds (30 by default: three
// of dd-trace's 10 s flushes, thirty 1 s collections of the others), side by side on CPU 1, and
// each one's CPU over that window, scaled to a minute, is its idle CPU per minute; all are then
// stopped by pid. Idling together keeps the run bounded and gives every variant the same
// machine for the idle figure. The order of the variants rotates every round. Printed per row:
// medians over rounds and the range over rounds; CPU per request also as added to the no-agent
// row of the same round; RSS also as added to the no-agent row.
// Bounded: rounds x (variants x (seconds + ~3 s) + idle + 1 s): ~3.5 min at the defaults; a
// watchdog ends the run at twice that plus a minute.

const fs = require('fs');
const path = require('path');
const dgram = require('dgram');
const { spawn, spawnSync } = require('child_process');
const { median, machine } = require('./fixtures/stats');
const { scrubEnv, stopChild, serverPort, Children, processCpuNs, watchdog } = require('../support/processes');

const REPO = path.resolve(__dirname, '..');
const REGISTER = path.join(REPO, 'register.js');
const SERVER = path.join(__dirname, 'fixtures', 'hello-server.js');
const PEERS = path.join(__dirname, 'fixtures', 'peers');
const LOAD = path.join(PEERS, 'load.js');
const SERVER_CPU = '1';
const LOAD_CPU = '0';

function parseArgs(argv) {
  const opts = { rounds: 3, seconds: 4, idle: 30, rate: 1000, connections: 10, node: process.execPath, json: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--json') { opts.json = true; continue; }
    if (argv[i] === '--help' || argv[i] === '-h') {
      console.log('usage: node bench/peers.js [--rounds 3] [--seconds 4] [--idle 30] [--rate 1000] [--connections 10] [--node PATH] [--json]');
      process.exit(0);
    }
    const nodeArg = /^--node(?:=(.*))?$/.exec(argv[i]);
    if (nodeArg) {
      opts.node = nodeArg[1] !== undefined ? nodeArg[1] : argv[++i];
      if (!opts.node || !fs.existsSync(opts.node)) throw new Error(`--node needs the path of a node binary, got ${opts.node}`);
      continue;
    }
    const m = /^--(rounds|seconds|idle|rate|connections)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]} (try --help)`);
    const raw = m[2] !== undefined ? m[2] : argv[++i];
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${m[1]} needs a positive integer, got ${raw}`);
    if (m[1] === 'idle' && n < 30) throw new Error(`--idle needs 30 seconds or more (a collector that reports every 10 s is measured over three reports), got ${raw}`);
    opts[m[1]] = n;
  }
  return opts;
}

/** Whether this checkout's uvscope has the threadpool tracer (UVSCOPE_TRACER). */
function hasTracer() {
  const files = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(dir, e.name));
      else if (e.name.endsWith('.js')) files.push(path.join(dir, e.name));
    }
  };
  walk(path.join(REPO, 'lib'));
  return files.some((f) => fs.readFileSync(f, 'utf8').includes('UVSCOPE_TRACER'));
}

function variants(ports) {
  const uvscope = [REGISTER, path.join(PEERS, 'uvscope-read.js')];
  return [
    { id: 'none', label: 'no agent', preloads: [] },
    { id: 'uvscope', label: 'uvscope (defaults)', preloads: uvscope, env: { UVSCOPE_PROMETHEUS_PORT: '0' } },
    {
      id: 'uvscope-tracer',
      label: 'uvscope, tracer armed',
      preloads: uvscope,
      env: { UVSCOPE_PROMETHEUS_PORT: '0', UVSCOPE_TRACER: 'on' },
      slot: hasTracer() ? null : 'slot: the threadpool tracer (UVSCOPE_TRACER=on) is not in this checkout yet',
    },
    { id: 'prom-client', label: 'prom-client defaults, 1 s', preloads: [path.join(PEERS, 'prom-client.js')] },
    { id: 'otel', label: 'OTel runtime-node, 1 s', preloads: [path.join(PEERS, 'otel-runtime-node.js')] },
    {
      id: 'dd-trace',
      label: 'dd-trace runtime metrics',
      preloads: [path.join(PEERS, 'dd-trace.js')],
      env: { BENCH_DOGSTATSD_PORT: String(ports.dogstatsd), BENCH_TRACE_AGENT_PORT: String(ports.traceAgent) },
    },
  ];
}

// No setting of uvscope's or the peers' leaks in; dd-trace sends no telemetry and polls no remote
// configuration.
function cleanEnv(extra) {
  const extraWithDd = { DD_INSTRUMENTATION_TELEMETRY_ENABLED: 'false', DD_REMOTE_CONFIGURATION_ENABLED: 'false', ...extra };
  return scrubEnv(extraWithDd, (k) => k.startsWith('UVSCOPE_') || k.startsWith('DD_') || k.startsWith('OTEL_'));
}

function rssMB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const children = new Children();

async function startServer(variant, opts) {
  const args = ['-c', SERVER_CPU, opts.node];
  for (const p of variant.preloads) args.push('--require', p);
  args.push(SERVER, '0');
  const started = process.hrtime.bigint();
  // taskset execs node: the child's pid is the server's.
  const child = children.track(spawn('taskset', args, { env: cleanEnv(variant.env), stdio: ['ignore', 'pipe', 'pipe'] }));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const port = await serverPort(child, { name: `${variant.id} server`, timeoutMs: 20000, detail: () => `\n${stderr}` });
  return { child, port, startupMs: Number(process.hrtime.bigint() - started) / 1e6, stderr: () => stderr };
}

/** SIGTERM by pid, SIGKILL after 5 s. */
function stopServer(child) {
  return stopChild(child, { signal: 'SIGTERM', graceMs: 5000 });
}

function runLoad(port, seconds, opts) {
  const env = cleanEnv({ LOAD_URL: `http://127.0.0.1:${port}/`, LOAD_SECONDS: String(seconds), LOAD_RATE: String(opts.rate), LOAD_CONNECTIONS: String(opts.connections) });
  const child = children.track(spawn('taskset', ['-c', LOAD_CPU, process.execPath, LOAD], { env, stdio: ['ignore', 'pipe', 'inherit'] }));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`load generator exited with ${code}`));
      else resolve(JSON.parse(out.trim().split('\n').pop()));
    });
  });
}

/** Serves the load; the server is left running (idle) and returned with its figures. */
async function loadVariant(variant, opts) {
  const server = await startServer(variant, opts);
  try {
    await runLoad(server.port, 1, opts); // warm-up, discarded
    const cpu0 = processCpuNs(server.child.pid);
    const load = await runLoad(server.port, opts.seconds, opts);
    const cpu1 = processCpuNs(server.child.pid);
    const rss = rssMB(server.child.pid);
    if (load.errors || load.non2xx) throw new Error(`${variant.id}: ${load.errors} errors, ${load.non2xx} non-2xx`);
    return {
      server,
      figures: {
        startupMs: server.startupMs,
        requests: load.requests,
        cpuPerRequestUs: (cpu1 - cpu0) / load.requests / 1000,
        rssMB: rss,
      },
    };
  } catch (err) {
    await stopServer(server.child);
    throw err;
  }
}

/** Every variant of one round: each serves its load in turn, then all idle together. */
async function measureRound(active, round, opts) {
  const up = [];
  try {
    for (let i = 0; i < active.length; i++) {
      const v = active[(i + round) % active.length];
      up.push({ v, ...(await loadVariant(v, opts)) });
    }
    await sleep(1000);
    const idle0 = up.map((u) => processCpuNs(u.server.child.pid));
    await sleep(opts.idle * 1000);
    const idle1 = up.map((u) => processCpuNs(u.server.child.pid));
    return up.map((u, k) => ({
      id: u.v.id,
      round,
      ...u.figures,
      idleRssMB: rssMB(u.server.child.pid),
      idleCpuMsPerMinute: ((idle1[k] - idle0[k]) / 1e6) * (60 / opts.idle),
    }));
  } finally {
    await Promise.all(up.map((u) => stopServer(u.server.child)));
  }
}

function range(xs) {
  return [Math.min(...xs), Math.max(...xs)];
}

/**
 * Run every variant for every round, rotating the order.
 * @returns {Promise<object[]>} per variant: medians and ranges, or a slot/skip note
 */
async function measure(opts) {
  const sink = dgram.createSocket('udp4');
  sink.on('message', () => {}); // DogStatsD datagrams are read and dropped
  await new Promise((resolve) => sink.bind(0, '127.0.0.1', resolve));
  const traceAgent = require('net').createServer((s) => s.destroy());
  await new Promise((resolve) => traceAgent.listen(0, '127.0.0.1', resolve));
  try {
    const list = variants({ dogstatsd: sink.address().port, traceAgent: traceAgent.address().port });
    const active = list.filter((v) => !v.slot);
    const runs = new Map(list.map((v) => [v.id, []]));
    for (let round = 0; round < opts.rounds; round++) {
      for (const r of await measureRound(active, round, opts)) runs.get(r.id).push(r);
    }
    const none = runs.get('none');
    return list.map((v) => {
      if (v.slot) return { id: v.id, label: v.label, slot: v.slot };
      const r = runs.get(v.id);
      const sameRound = (x) => none.find((n) => n.round === x.round);
      const added = r.map((x) => x.cpuPerRequestUs - sameRound(x).cpuPerRequestUs);
      const addedRss = r.map((x) => x.rssMB - sameRound(x).rssMB);
      const pick = (k) => r.map((x) => x[k]);
      return {
        id: v.id,
        label: v.label,
        cpuPerRequestUs: median(pick('cpuPerRequestUs')),
        cpuPerRequestRange: range(pick('cpuPerRequestUs')),
        addedCpuPerRequestUs: median(added),
        addedRange: range(added),
        idleCpuMsPerMinute: median(pick('idleCpuMsPerMinute')),
        idleRange: range(pick('idleCpuMsPerMinute')),
        rssMB: median(pick('rssMB')),
        rssRange: range(pick('rssMB')),
        addedRssMB: median(addedRss),
        addedRssRange: range(addedRss),
        idleRssMB: median(pick('idleRssMB')),
        startupMs: median(pick('startupMs')),
        startupRange: range(pick('startupMs')),
        requests: median(pick('requests')),
      };
    });
  } finally {
    sink.close();
    traceAgent.close();
  }
}

/** uvscope against each peer on every shared row: where it costs more, and by how much. */
function compare(results) {
  const uv = results.find((r) => r.id === 'uvscope');
  const out = [];
  if (!uv || uv.slot) return out;
  const rows = [
    ['added CPU per request (µs)', 'addedCpuPerRequestUs'],
    ['idle CPU (ms per minute)', 'idleCpuMsPerMinute'],
    ['RSS (MB)', 'rssMB'],
    ['RSS added to no agent (MB)', 'addedRssMB'],
    ['startup (ms)', 'startupMs'],
  ];
  for (const peer of results.filter((r) => ['prom-client', 'otel', 'dd-trace'].includes(r.id) && !r.slot)) {
    for (const [label, key] of rows) {
      const diff = uv[key] - peer[key];
      out.push({ peer: peer.id, row: label, uvscope: uv[key], other: peer[key], moreBy: diff > 0 ? diff : 0 });
    }
  }
  return out;
}

function hasTaskset() {
  return spawnSync('taskset', ['-c', '0', 'true']).status === 0;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!hasTaskset()) throw new Error('bench/peers.js needs taskset (util-linux) and 2 CPUs to pin the server and the load generator apart');
  const perRoundS = 6 * (opts.seconds + 3) + opts.idle + 1;
  const budgetMs = 2 * opts.rounds * perRoundS * 1000 + 60000;
  watchdog('bench/peers.js', budgetMs, () => children);
  const before = machine();
  const nodeVersion = opts.node === process.execPath ? process.version : spawnSync(opts.node, ['-v'], { encoding: 'utf8' }).stdout.trim();
  const results = await measure(opts);
  const after = machine().load;
  const verdicts = compare(results);
  if (opts.json) {
    console.log(JSON.stringify({ ...before, serverNode: nodeVersion, loadAfter: after, opts, results, verdicts }));
    return;
  }
  console.log(`${before.date}, servers on node ${nodeVersion} (${opts.node}), ${before.cpus} CPUs (${before.model}); load ${before.load} before, ${after} after`);
  console.log(`${opts.rounds} rounds, variants rotated; ${opts.rate} req/s for ${opts.seconds} s (server on CPU ${SERVER_CPU}, load on CPU ${LOAD_CPU}); then all idle together for ${opts.idle} s, idle CPU scaled to a minute`);
  const f = (v, d = 1) => v.toFixed(d);
  const rg = (r, d = 1) => `${f(r[0], d)}..${f(r[1], d)}`;
  console.log(`${'variant'.padEnd(26)} ${'CPU/req µs'.padStart(14)} ${'added µs'.padStart(17)} ${'idle ms/min'.padStart(16)} ${'RSS MB'.padStart(16)} ${'added RSS MB'.padStart(18)} ${'startup ms'.padStart(14)}`);
  for (const r of results) {
    if (r.slot) {
      console.log(`${r.label.padEnd(26)} ${r.slot}`);
      continue;
    }
    console.log(`${r.label.padEnd(26)} ${`${f(r.cpuPerRequestUs)} (${rg(r.cpuPerRequestRange, 0)})`.padStart(14)} ${`${f(r.addedCpuPerRequestUs)} (${rg(r.addedRange)})`.padStart(17)} ${`${f(r.idleCpuMsPerMinute, 0)} (${rg(r.idleRange, 0)})`.padStart(16)} ${`${f(r.rssMB)} (${rg(r.rssRange, 0)})`.padStart(16)} ${`${f(r.addedRssMB)} (${rg(r.addedRssRange)})`.padStart(18)} ${`${f(r.startupMs, 0)} (${rg(r.startupRange, 0)})`.padStart(14)}`);
  }
  const misses = verdicts.filter((v) => v.moreBy > 0);
  if (misses.length === 0) console.log('uvscope costs no more than any peer on every shared row (medians).');
  for (const v of misses) console.log(`uvscope costs more than ${v.peer} on ${v.row}: ${f(v.uvscope, 2)} vs ${f(v.other, 2)} (+${f(v.moreBy, 2)})`);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    children.killAll();
    process.exit(1);
  });
}

module.exports = { measure, compare };
