'use strict';

// CPU per request of an HTTP server whose handler awaits, at a fixed request rate, in three
// variants alternated in one run: without uvscope, with the agent (UVSCOPE_TRACER=off), and with
// the threadpool tracer armed all along (UVSCOPE_TRACER=on).
//
//   node bench/tracer.js [--rounds 5] [--duration 5] [--rate 1000] [--connections 10]
//
// The rate is fixed (autocannon's overallRate), well below what the server does flat out, so all
// variants serve the same requests and the server's CPU time per request is the figure compared.
// CPU time is the sum over the server's threads of /proc/<pid>/task/*/schedstat (ns). On a small
// machine shared with other work, the three servers run at the same time, each under its own
// load at the same rate, so whatever else the machine does hits all three alike; each round
// starts fresh servers. Bounded: rounds x (duration + 1 s) plus child starts; a watchdog aborts
// 30 s past that.

const path = require('path');
const os = require('os');
const { spawn } = require('child_process');
const { scrubEnv, stopChild, serverPort, Children, processCpuNs, watchdog } = require('../support/processes');
const autocannon = require('autocannon');

const REPO = path.resolve(__dirname, '..');
const REGISTER = path.join(REPO, 'register.js');
const SERVER = path.join(__dirname, 'fixtures', 'await-server.js');
const WARMUP_S = 1;
const IDLE_S = 2;
const VARIANTS = [
  { name: 'without', env: null },
  { name: 'agent, tracer off', env: { UVSCOPE_TRACER: 'off' } },
  { name: 'tracer armed', env: { UVSCOPE_TRACER: 'on' } },
];

function parseArgs(argv) {
  const opts = { rounds: 5, duration: 5, rate: 1000, connections: 10 };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(rounds|duration|rate|connections)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]}: node bench/tracer.js [--rounds 5] [--duration 5] [--rate 1000] [--connections 10]`);
    const n = Number(m[2] !== undefined ? m[2] : argv[++i]);
    if (!Number.isInteger(n) || n < 1 || (m[1] === 'rate' && n > 20000)) throw new Error(`--${m[1]}: a positive integer (rate at most 20000)`);
    opts[m[1]] = n;
  }
  return opts;
}

const children = new Children();

async function startServer(variant) {
  // No endpoint: nothing scrapes during the load; the agent still samples every second.
  const env = scrubEnv(variant.env ? { ...variant.env, UVSCOPE_EXPORTERS: 'none' } : {});
  const args = variant.env ? ['--require', REGISTER, SERVER] : [SERVER];
  const child = children.track(spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] }));
  return { child, port: await serverPort(child) };
}

/** SIGTERM by pid, SIGKILL after 5 s. */
function stopServer(child) {
  return stopChild(child, { signal: 'SIGTERM', graceMs: 5000 });
}

/** CPU seconds of every thread of a process so far. */
function cpuSeconds(pid) {
  return processCpuNs(pid) / 1e9;
}

function load(port, opts, duration) {
  return autocannon({ url: `http://127.0.0.1:${port}/`, connections: opts.connections, duration, overallRate: opts.rate });
}

async function runRound(opts) {
  const servers = [];
  try {
    for (const variant of VARIANTS) servers.push(await startServer(variant));
    await Promise.all(servers.map(({ port }) => load(port, opts, WARMUP_S)));
    // The agent's fixed cost (a sample a second, its probes) with no request at all.
    const idle0 = servers.map(({ child }) => cpuSeconds(child.pid));
    const t0 = process.hrtime.bigint();
    await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000));
    const idleSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const idlePerSecond = servers.map(({ child }, i) => (cpuSeconds(child.pid) - idle0[i]) / idleSeconds);
    const cpu0 = servers.map(({ child }) => cpuSeconds(child.pid));
    const t1 = process.hrtime.bigint();
    const results = await Promise.all(servers.map(({ port }) => load(port, opts, opts.duration)));
    const loadSeconds = Number(process.hrtime.bigint() - t1) / 1e9;
    return servers.map(({ child }, i) => {
      const r = results[i];
      const cpu = cpuSeconds(child.pid) - cpu0[i];
      return {
        cpuUs: (cpu / r.requests.total) * 1e6,
        netUs: ((cpu - idlePerSecond[i] * loadSeconds) / r.requests.total) * 1e6,
        idleMsPerSecond: idlePerSecond[i] * 1000,
        total: r.requests.total,
        problems: r.errors + r.timeouts + r.non2xx,
      };
    });
  } finally {
    await Promise.all(servers.map(({ child }) => stopServer(child)));
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const budgetS = opts.rounds * (opts.duration + WARMUP_S + IDLE_S + 3) + 30;
  watchdog('bench/tracer.js', budgetS * 1000, () => children);
  console.log(`uvscope tracer benchmark: node ${process.version}, ${os.cpus().length} CPU(s); ${opts.rate} req/s over ${opts.connections} connections, ` +
    `${WARMUP_S} s warm-up + ${opts.duration} s per variant, ${opts.rounds} round(s)`);
  const results = VARIANTS.map(() => []);
  const net = VARIANTS.map(() => []);
  const idle = VARIANTS.map(() => []);
  for (let round = 0; round < opts.rounds; round++) {
    const line = [];
    const round_ = await runRound(opts);
    round_.forEach((r, i) => {
      if (r.problems) throw new Error(`${VARIANTS[i].name}: ${r.problems} errors`);
      results[i].push(r.cpuUs);
      net[i].push(r.netUs);
      idle[i].push(r.idleMsPerSecond);
      line.push(`${VARIANTS[i].name}: ${r.cpuUs.toFixed(1)} µs/req (${r.netUs.toFixed(1)} net of idle ${r.idleMsPerSecond.toFixed(2)} ms/s; ${r.total} req)`);
    });
    const ratios = VARIANTS.slice(1).map((v, k) => `${v.name} ${(results[k + 1][round] / results[0][round]).toFixed(3)}`);
    console.log(`round ${round + 1}: ${line.join(', ')}; ratios ${ratios.join(', ')}`);
  }
  const base = results[0];
  for (let i = 1; i < VARIANTS.length; i++) {
    const ratios = results[i].map((x, round) => x / base[round]);
    console.log(`median CPU/request ratio, ${VARIANTS[i].name} / without: ${median(ratios).toFixed(3)} (rounds: ${ratios.map((r) => r.toFixed(3)).join(', ')})`);
  }
  for (let i = 1; i < VARIANTS.length; i++) {
    const ratios = net[i].map((x, round) => x / net[0][round]);
    console.log(`median CPU/request ratio net of idle, ${VARIANTS[i].name} / without: ${median(ratios).toFixed(3)} (rounds: ${ratios.map((r) => r.toFixed(3)).join(', ')})`);
  }
  const armedVsOff = results[2].map((x, round) => x / results[1][round]);
  console.log(`median CPU/request ratio, tracer armed / tracer off: ${median(armedVsOff).toFixed(3)} (rounds: ${armedVsOff.map((r) => r.toFixed(3)).join(', ')})`);
  console.log(`median CPU/request without: ${median(base).toFixed(1)} µs; idle CPU (ms per s): ${VARIANTS.map((v, i) => `${v.name} ${median(idle[i]).toFixed(2)}`).join(', ')}`);
}

main().catch((err) => {
  console.error(err.stack);
  children.killAll();
  process.exit(1);
});
