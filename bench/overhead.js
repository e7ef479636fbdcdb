'use strict';

// Throughput and p99 latency of an HTTP hello world, WITHOUT and WITH the agent preloaded
// (node --require <repo>/register.js), alternated in one run.
//
//   node bench/overhead.js [--rounds 3] [--duration 5] [--connections 50] [--rate 0]
//
// --rate N caps the load at N requests/s in total (autocannon's overallRate; 0 = as fast as
// possible, the default). With a cap below what the server can do, req/s is the same for both
// variants and the server's CPU time per request is the figure to compare: on a 2-core machine it
// is less disturbed by the load generator competing for the CPUs.
//
// Each round runs both variants; the order flips every round (without,with / with,without...) so
// a drift of the machine over the run does not always favour one side. Each variant: a fresh
// server child process, 1 s of warm-up load (discarded), then `duration` seconds measured by
// autocannon running in THIS process, then the child is stopped by pid. With the agent, its
// metrics endpoint is scraped once after the measurement to prove it was running (that scrape is
// not part of the measured load). The agent runs with its defaults (1 s sampling interval,
// Prometheus exporter), nothing scrapes it during the load.
//
// Bounded: rounds x 2 x (duration + 1 s) plus ~0.3 s per child start; 3 x 2 x 6 s = ~38 s at the
// defaults. A watchdog aborts the run if it goes 30 s past that.

const path = require('path');
const os = require('os');
const http = require('http');
const { spawn } = require('child_process');
const autocannon = require('autocannon');
const { scrubEnv, freePort, stopChild, serverPort, Children, watchdog } = require('../support/processes');

const REPO = path.resolve(__dirname, '..');
const REGISTER = path.join(REPO, 'register.js');
const SERVER = path.join(__dirname, 'fixtures', 'hello-server.js');
const WARMUP_S = 1;

function parseArgs(argv) {
  const opts = { rounds: 3, duration: 5, connections: 50, rate: 0 };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(rounds|duration|connections|rate)(?:=(.*))?$/.exec(argv[i]);
    if (argv[i] === '--help' || argv[i] === '-h') {
      console.log('usage: node bench/overhead.js [--rounds 3] [--duration 5] [--connections 50] [--rate 0]');
      process.exit(0);
    }
    if (!m) throw new Error(`unknown argument ${argv[i]} (try --help)`);
    const raw = m[2] !== undefined ? m[2] : argv[++i];
    const n = Number(raw);
    if (!Number.isInteger(n) || n < (m[1] === 'rate' ? 0 : 1)) throw new Error(`--${m[1]} needs a positive integer, got ${raw}`);
    opts[m[1]] = n;
  }
  return opts;
}


const children = new Children();

/** Start the hello server (with or without the agent); resolves { child, port } once it listens. */
async function startServer(withAgent, metricsPort) {
  const env = scrubEnv(withAgent ? { UVSCOPE_EXPORTERS: 'prometheus', UVSCOPE_PROMETHEUS_PORT: String(metricsPort) } : {});
  const args = withAgent ? ['--require', REGISTER, SERVER, '0'] : [SERVER, '0'];
  const child = children.track(spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] }));
  return { child, port: await serverPort(child) };
}

/** SIGTERM by pid, SIGKILL after 5 s. */
function stopServer(child) {
  return stopChild(child, { signal: 'SIGTERM', graceMs: 5000 });
}

function scrape(port) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/metrics', timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(new Error('scrape timed out')));
    req.on('error', reject);
  });
}

// autocannon's own latency histogram has 1 ms resolution (integer ms), and a hello world on
// 127.0.0.1 answers in well under 1 ms, so its p99 reads 0 or 1. Its 'response' event carries the
// exact hrtime duration in ms: keep those and compute percentiles from them.
function load(port, connections, duration, rate) {
  let lat = new Float64Array(1 << 16);
  let n = 0;
  const instance = autocannon({ url: `http://127.0.0.1:${port}/`, connections, duration, ...(rate ? { overallRate: rate } : {}) });
  instance.on('response', (client, statusCode, resBytes, ms) => {
    if (n === lat.length) {
      const bigger = new Float64Array(lat.length * 2);
      bigger.set(lat);
      lat = bigger;
    }
    lat[n++] = ms;
  });
  return instance.then((result) => {
    const sorted = lat.subarray(0, n).sort();
    const pct = (q) => (n ? sorted[Math.min(n - 1, Math.ceil((q / 100) * n) - 1)] : NaN);
    return { result, p50: pct(50), p99: pct(99) };
  });
}

async function runVariant(withAgent, opts) {
  const metricsPort = withAgent ? await freePort() : undefined;
  const { child, port } = await startServer(withAgent, metricsPort);
  try {
    await load(port, opts.connections, WARMUP_S, opts.rate);
    const cpu0 = cpuSeconds(child.pid);
    const { result: r, p50, p99 } = await load(port, opts.connections, opts.duration, opts.rate);
    const cpu1 = cpuSeconds(child.pid);
    // Server CPU per request: less noisy than req/s on a small machine, where the load generator
    // sets the pace.
    const cpuUs = cpu0 !== null && cpu1 !== null && r.requests.total ? ((cpu1 - cpu0) / r.requests.total) * 1e6 : NaN;
    const problems = r.errors + r.timeouts + r.non2xx;
    let agentSeen = null;
    if (withAgent) {
      const s = await scrape(metricsPort);
      agentSeen = s.status === 200 && /nodejs_uv_handles_active/.test(s.body);
      if (!agentSeen) throw new Error(`the agent's /metrics on port ${metricsPort} answered ${s.status} without uvscope metrics`);
    }
    return { rps: r.requests.average, p50, p99, cpuUs, total: r.requests.total, problems };
  } finally {
    await stopServer(child);
  }
}

// CPU seconds (user + system) the server process used so far, from /proc/<pid>/stat (Linux;
// 10 ms ticks). Null where /proc is not available.
function cpuSeconds(pid) {
  try {
    const stat = require('fs').readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime (fields 14, 15)
  } catch {
    return null;
  }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const fmt = (n, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const budgetS = opts.rounds * 2 * (opts.duration + WARMUP_S + 1) + 30;
  const timer = watchdog('bench/overhead.js', budgetS * 1000, () => children);

  const cpus = os.cpus().length;
  console.log(`uvscope overhead benchmark: node ${process.version} (${process.execPath}), ${cpus} CPU(s), ${os.cpus()[0] ? os.cpus()[0].model : '?'}`);
  console.log(`hello-world HTTP server on 127.0.0.1, autocannon in the bench process: ${opts.connections} connections, ` +
    `${opts.rate ? `capped at ${opts.rate} req/s, ` : ''}${WARMUP_S} s warm-up + ${opts.duration} s measured per variant, ${opts.rounds} round(s); agent: --require ${path.relative(process.cwd(), REGISTER) || REGISTER}, defaults (1 s interval, Prometheus exporter)`);
  if (cpus <= 2) {
    console.log(`note: ${cpus} CPU(s): the load generator and the server compete for the CPU, so absolute req/s are ` +
      'low and noisy; compare the with/without ratio, not the absolute numbers, and expect a few % of noise.');
  }
  console.log('');
  console.log('round  variant      req/s    p50 ms   p99 ms   server CPU us/req   errors');

  const rounds = [];
  for (let i = 0; i < opts.rounds; i++) {
    const order = i % 2 === 0 ? [false, true] : [true, false];
    const res = {};
    for (const withAgent of order) {
      const r = await runVariant(withAgent, opts);
      res[withAgent ? 'with' : 'without'] = r;
      console.log(`${String(i + 1).padEnd(7)}${(withAgent ? 'with' : 'without').padEnd(10)}${fmt(r.rps).padStart(8)}  ` +
        `${fmt(r.p50, 3).padStart(8)} ${fmt(r.p99, 3).padStart(8)}   ${fmt(r.cpuUs, 2).padStart(17)}   ${r.problems}`);
    }
    const tr = res.with.rps / res.without.rps;
    const pr = res.with.p99 / res.without.p99;
    const cr = res.with.cpuUs / res.without.cpuUs;
    rounds.push({ tr, pr, cr, ...res });
    console.log(`       ratio with/without: throughput ${tr.toFixed(3)}, p99 ${pr.toFixed(3)}, server CPU per request ${cr.toFixed(3)}`);
  }

  const tMed = median(rounds.map((r) => r.tr));
  const pMed = median(rounds.map((r) => r.pr));
  const spread = (xs) => `${Math.min(...xs).toFixed(3)}..${Math.max(...xs).toFixed(3)}`;
  console.log('');
  console.log(`median throughput ratio (with/without): ${tMed.toFixed(3)}  (per round ${spread(rounds.map((r) => r.tr))})`);
  console.log(`median p99 latency ratio (with/without): ${pMed.toFixed(3)}  (per round ${spread(rounds.map((r) => r.pr))})`);
  const cMed = median(rounds.map((r) => r.cr));
  if (Number.isFinite(cMed)) console.log(`median server CPU per request ratio (with/without): ${cMed.toFixed(3)}  (per round ${spread(rounds.map((r) => r.cr))})`);
  const loss = Math.round((1 - tMed) * 1000) / 10 || 0;
  if (opts.rate) console.log(`throughput capped at ${opts.rate} req/s: compare the server CPU per request ratio, not the throughput`);
  console.log(`throughput loss with the agent: ${loss.toFixed(1)} %  (negative = the run with the agent was faster, i.e. noise)`);
  console.log(`median req/s: without ${fmt(median(rounds.map((r) => r.without.rps)))}, with ${fmt(median(rounds.map((r) => r.with.rps)))}; ` +
    `median p99 ms: without ${fmt(median(rounds.map((r) => r.without.p99)), 3)}, with ${fmt(median(rounds.map((r) => r.with.p99)), 3)}`);
  const errors = rounds.reduce((n, r) => n + r.with.problems + r.without.problems, 0);
  if (errors) console.log(`warning: ${errors} request error(s)/timeout(s)/non-2xx during the measured runs`);
  if (cpus <= 2) console.log(`(${cpus} CPU(s): autocannon and the server share them; a difference of a few % is within noise.)`);
  clearTimeout(timer);
}

function cleanupAndExit(code) {
  children.killAll();
  process.exit(code);
}

process.on('SIGINT', () => cleanupAndExit(130));
process.on('SIGTERM', () => cleanupAndExit(143));

main().catch((err) => {
  console.error(`overhead: ${err && err.stack ? err.stack : err}`);
  cleanupAndExit(1);
});
