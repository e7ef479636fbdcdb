'use strict';

// The blockers capture's cost (lib/sources/blockers/), in three variants run side by side in one
// run: without uvscope, the agent with UVSCOPE_BLOCKERS=off, with it on (always running), with it
// auto (the default: started by the first block, so not during the idle and healthy phases).
//
//   node bench/blockers.js [--rounds 3] [--duration 4] [--rate 1000] [--connections 10]
//
// Each round, fresh servers (bench/fixtures/blocking-server.js), all under the same load:
// - idle: CPU of all threads over IDLE_S with no request (the watchdog's polls);
// - healthy: CPU per request at a fixed rate (autocannon's overallRate) on /, no block;
// - blocking: the same load plus a /block request (a 150 ms spin in its handler) every 500 ms,
//   each one a captured block where the capture is on: CPU per request, and the requests' p99;
// - RSS after the healthy phase (auto: not started yet) and at the end (the watchdog's isolate).
// CPU is /proc/<pid>/task/*/schedstat summed. The variants load the machine alike (same rate at
// the same time), so what else runs on it hits all three. Bounded: rounds x (2 x duration +
// ~4 s); a watchdog aborts 30 s past that.

const path = require('path');
const fs = require('fs');
const http = require('http');
const os = require('os');
const { spawn } = require('child_process');
const { scrubEnv, stopChild, serverPort, Children, processCpuNs, watchdog } = require('../support/processes');
const autocannon = require('autocannon');

const REPO = path.resolve(__dirname, '..');
const REGISTER = path.join(REPO, 'register.js');
const SERVER = path.join(__dirname, 'fixtures', 'blocking-server.js');
const WARMUP_S = 1;
const IDLE_S = 6;
const BLOCK_EVERY_MS = 500;
const VARIANTS = [
  { name: 'without', env: null },
  { name: 'blockers off', env: { UVSCOPE_BLOCKERS: 'off' } },
  { name: 'blockers on', env: { UVSCOPE_BLOCKERS: 'on' } },
  { name: 'blockers auto', env: { UVSCOPE_BLOCKERS: 'auto' } },
];

function parseArgs(argv) {
  const opts = { rounds: 3, duration: 4, rate: 1000, connections: 10 };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(rounds|duration|rate|connections)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]}: node bench/blockers.js [--rounds 3] [--duration 4] [--rate 1000] [--connections 10]`);
    const n = Number(m[2] !== undefined ? m[2] : argv[++i]);
    if (!Number.isInteger(n) || n < 1 || (m[1] === 'rate' && n > 20000)) throw new Error(`--${m[1]}: a positive integer (rate at most 20000)`);
    opts[m[1]] = n;
  }
  return opts;
}

const children = new Children();

async function startServer(variant) {
  const env = scrubEnv(variant.env ? { ...variant.env, UVSCOPE_EXPORTERS: 'none' } : {});
  const args = variant.env ? ['--require', REGISTER, SERVER] : [SERVER];
  const child = children.track(spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] }));
  return { child, port: await serverPort(child) };
}

const cpuSeconds = (pid) => processCpuNs(pid) / 1e9;
const rssMb = (pid) => Number(/^VmRSS:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'latin1'))[1]) / 1024;
const load = (port, opts, duration) => autocannon({ url: `http://127.0.0.1:${port}/`, connections: opts.connections, duration, overallRate: opts.rate });

/** A /block request every BLOCK_EVERY_MS until stopped; resolves with how many were answered. */
function blocker(port) {
  let stop = false;
  let answered = 0;
  const done = (async () => {
    while (!stop) {
      await new Promise((resolve) => {
        http.get(`http://127.0.0.1:${port}/block`, (res) => res.resume().on('end', () => resolve(answered++))).on('error', resolve);
      });
      await new Promise((r) => setTimeout(r, BLOCK_EVERY_MS));
    }
    return answered;
  })();
  return { stop: () => ((stop = true), done) };
}

async function measured(servers, fn) {
  const cpu0 = servers.map(({ child }) => cpuSeconds(child.pid));
  const results = await fn();
  return servers.map(({ child }, i) => ({ cpu: cpuSeconds(child.pid) - cpu0[i], r: results[i] }));
}

async function runRound(opts) {
  const servers = [];
  try {
    for (const variant of VARIANTS) servers.push(await startServer(variant));
    await Promise.all(servers.map(({ port }) => load(port, opts, WARMUP_S)));
    const idle = await measured(servers, async () => {
      await new Promise((r) => setTimeout(r, IDLE_S * 1000));
      return servers.map(() => null);
    });
    const healthy = await measured(servers, () => Promise.all(servers.map(({ port }) => load(port, opts, opts.duration))));
    const healthyRss = servers.map(({ child }) => rssMb(child.pid));
    const blocking = await measured(servers, async () => {
      const blockers = servers.map(({ port }) => blocker(port));
      const r = await Promise.all(servers.map(({ port }) => load(port, opts, opts.duration)));
      const blocks = await Promise.all(blockers.map((b) => b.stop()));
      return r.map((x, i) => ({ ...x, blocks: blocks[i] }));
    });
    return servers.map(({ child }, i) => ({
      idleMsPerS: (idle[i].cpu / IDLE_S) * 1000,
      healthyUs: (healthy[i].cpu / healthy[i].r.requests.total) * 1e6,
      blockingUs: (blocking[i].cpu / blocking[i].r.requests.total) * 1e6,
      blockingP99: blocking[i].r.latency.p99,
      blocks: blocking[i].r.blocks,
      healthyRssMb: healthyRss[i],
      rssMb: rssMb(child.pid),
      problems: healthy[i].r.errors + healthy[i].r.timeouts + blocking[i].r.errors + blocking[i].r.timeouts,
    }));
  } finally {
    await Promise.all(servers.map(({ child }) => stopChild(child, { signal: 'SIGTERM', graceMs: 5000 })));
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const budgetS = opts.rounds * (2 * opts.duration + WARMUP_S + IDLE_S + 4) + 30;
  watchdog('bench/blockers.js', budgetS * 1000, () => children);
  console.log(`uvscope blockers benchmark: node ${process.version}, ${os.cpus().length} CPU(s); ${opts.rate} req/s over ${opts.connections} connections, ` +
    `${opts.duration} s healthy + ${opts.duration} s with a 150 ms block every ${BLOCK_EVERY_MS} ms, ${opts.rounds} round(s)`);
  const rows = VARIANTS.map(() => []);
  for (let round = 0; round < opts.rounds; round++) {
    const r = await runRound(opts);
    r.forEach((x, i) => {
      if (x.problems) throw new Error(`${VARIANTS[i].name}: ${x.problems} errors`);
      rows[i].push(x);
    });
    console.log(`round ${round + 1}: ${r.map((x, i) => `${VARIANTS[i].name}: idle ${x.idleMsPerS.toFixed(2)} ms/s, healthy ${x.healthyUs.toFixed(1)} µs/req, blocking ${x.blockingUs.toFixed(1)} µs/req (p99 ${x.blockingP99} ms, ${x.blocks} blocks), RSS ${x.healthyRssMb.toFixed(1)} MB healthy, ${x.rssMb.toFixed(1)} MB at the end`).join('; ')}`);
  }
  const m = (i, k) => median(rows[i].map((x) => x[k]));
  const ratio = (k, a, b) => median(rows[a].map((x, round) => x[k] / rows[b][round][k])).toFixed(3);
  for (const [i, v] of VARIANTS.entries()) {
    console.log(`median ${v.name}: idle ${m(i, 'idleMsPerS').toFixed(2)} ms/s, healthy ${m(i, 'healthyUs').toFixed(1)} µs/req, blocking ${m(i, 'blockingUs').toFixed(1)} µs/req (p99 ${m(i, 'blockingP99')} ms), RSS ${m(i, 'healthyRssMb').toFixed(1)} MB healthy, ${m(i, 'rssMb').toFixed(1)} MB at the end`);
  }
  console.log(`median ratios, auto / off: healthy ${ratio('healthyUs', 3, 1)}, blocking ${ratio('blockingUs', 3, 1)}, idle ${ratio('idleMsPerS', 3, 1)}; RSS healthy auto - off ${(m(3, 'healthyRssMb') - m(1, 'healthyRssMb')).toFixed(1)} MB, on - off ${(m(2, 'healthyRssMb') - m(1, 'healthyRssMb')).toFixed(1)} MB; idle auto - off: ${((m(3, 'idleMsPerS') - m(1, 'idleMsPerS')) * 60).toFixed(0)} ms of CPU a minute`);
  console.log(`median ratios, on / off: healthy ${ratio('healthyUs', 2, 1)}, blocking ${ratio('blockingUs', 2, 1)}, idle ${ratio('idleMsPerS', 2, 1)}; off / without: healthy ${ratio('healthyUs', 1, 0)}; idle on - off: ${((m(2, 'idleMsPerS') - m(1, 'idleMsPerS')) * 60).toFixed(0)} ms of CPU a minute`);
}

main().catch((err) => {
  console.error(err.stack);
  children.killAll();
  process.exit(1);
});
