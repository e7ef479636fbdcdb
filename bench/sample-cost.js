'use strict';

// The cost of one agent sample, and of rendering one Prometheus scrape, with N open sockets.
//
//   node bench/sample-cost.js [--sockets 10000] [--samples 200]
//
// Where the sockets live: this process runs a net server on 127.0.0.1 and holds the N ACCEPTED
// sockets (those are the handles the agent sees: N TCPSocketWrap). The N CLIENT ends are opened by
// a child process (bench/fixtures/socket-clients.js). Both ends in one process would need 2N fds:
// 10000 connections = 20000 fds + stdio, pipes, epoll..., over this machine's limit of 20000
// (`ulimit -n`, soft = hard, so Node cannot raise it either). With the clients in a child, each
// process holds about N fds, so the default of 10000 fits, and up to (limit - 200) works.
//
// Phases (all timed with process.hrtime.bigint(), per call):
//   0. baseline, before any socket: getActiveResourcesInfo() and sampleNow() of an agent started
//      with exporters 'none' and a 1 h interval (so its timer never fires during the run);
//   1. N connections opened, agent started again the same way: sampleNow() x samples (after a
//      warm-up), process.getActiveResourcesInfo() alone x samples, and the resources sampler's
//      countTypes() over its result, to split the cost;
//   2. agent restarted with exporters 'prometheus', port 0: one sampleNow(), then
//      agent.exporters[0].registry.metrics() (the text of one scrape) x 50.
// Everything is closed at the end (the client child stopped by pid). Bounded: a watchdog aborts
// after 30 s; a run at the defaults takes a few seconds.

const path = require('path');
const fs = require('fs');
const net = require('net');
const { spawn } = require('child_process');

const REPO = path.resolve(__dirname, '..');
const { stopChild, watchdog } = require(path.join(REPO, 'support', 'processes.js'));
const uvscope = require(path.join(REPO, 'lib', 'index.js'));
const { countTypes } = require(path.join(REPO, 'lib', 'sources', 'resources.js'));
const CLIENTS = path.join(__dirname, 'fixtures', 'socket-clients.js');
const WATCHDOG_MS = 30000;
const WARMUP = 20;
const RENDERS = 50;

function parseArgs(argv) {
  const opts = { sockets: 10000, samples: 200 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--help' || argv[i] === '-h') {
      console.log('usage: node bench/sample-cost.js [--sockets 10000] [--samples 200]');
      process.exit(0);
    }
    const m = /^--(sockets|samples)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]} (try --help)`);
    const raw = m[2] !== undefined ? m[2] : argv[++i];
    const n = Number(raw);
    if (!Number.isInteger(n) || n < (m[1] === 'sockets' ? 0 : 1)) throw new Error(`--${m[1]} needs an integer, got ${raw}`);
    opts[m[1]] = n;
  }
  return opts;
}

/** The soft RLIMIT_NOFILE of this process (Linux), or Infinity when unknown. */
function fdLimit() {
  try {
    const line = fs.readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const soft = line.trim().split(/\s+/)[3];
    return soft === 'unlimited' ? Infinity : Number(soft);
  } catch {
    return Infinity;
  }
}

function openFds() {
  try {
    return fs.readdirSync('/proc/self/fd').length;
  } catch {
    return NaN;
  }
}

/** Time fn() `times` times; returns per-call ms stats. */
function timeCalls(fn, times) {
  const ms = new Float64Array(times);
  for (let i = 0; i < times; i++) {
    const t = process.hrtime.bigint();
    fn();
    ms[i] = Number(process.hrtime.bigint() - t) / 1e6;
  }
  return stats(ms);
}

async function timeAsyncCalls(fn, times) {
  const ms = new Float64Array(times);
  for (let i = 0; i < times; i++) {
    const t = process.hrtime.bigint();
    await fn();
    ms[i] = Number(process.hrtime.bigint() - t) / 1e6;
  }
  return stats(ms);
}

function stats(ms) {
  const s = Float64Array.from(ms).sort();
  const at = (q) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { n: s.length, median: at(0.5), p99: at(0.99), max: s[s.length - 1], mean };
}

const f3 = (x) => x.toFixed(3).padStart(8);
function row(label, st) {
  console.log(`  ${label.padEnd(46)} median ${f3(st.median)} ms   p99 ${f3(st.p99)} ms   max ${f3(st.max)} ms   (n=${st.n})`);
}

function startAgent(options) {
  const agent = uvscope.start(options);
  if (!agent) throw new Error('uvscope.start() returned null');
  return agent;
}

let child = null;
function stopClients() {
  return stopChild(child, { signal: 'SIGTERM', graceMs: 3000 });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const timer = watchdog('bench/sample-cost.js', WATCHDOG_MS, () => [child]);

  const limit = fdLimit();
  console.log(`uvscope sample cost: node ${process.version}, ${opts.sockets} sockets, fd limit ${limit} per process ` +
    '(server ends here, client ends in a child process)');
  if (opts.sockets + 200 > limit) {
    throw new Error(`--sockets ${opts.sockets} needs ~${opts.sockets + 200} fds in this process; the limit is ${limit}`);
  }

  // Phase 0: baseline.
  console.log(`\nbaseline (${process.getActiveResourcesInfo().length} active resources):`);
  let agent = startAgent({ exporters: 'none', intervalMs: 3600000 });
  timeCalls(() => agent.sampleNow(), WARMUP);
  row('agent.sampleNow()', timeCalls(() => agent.sampleNow(), opts.samples));
  row('process.getActiveResourcesInfo()', timeCalls(() => process.getActiveResourcesInfo(), opts.samples));
  await uvscope.stop();

  // Open the sockets.
  const accepted = new Set();
  const server = net.createServer((s) => {
    accepted.add(s);
    s.on('error', () => {});
    s.once('close', () => accepted.delete(s));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve);
  });
  const t0 = process.hrtime.bigint();
  child = spawn(process.execPath, [CLIENTS, String(server.address().port), String(opts.sockets)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  await new Promise((resolve, reject) => {
    let out = '';
    let ready = false;
    const check = () => {
      if (ready && accepted.size === opts.sockets) {
        clearInterval(poll);
        resolve();
      }
    };
    const poll = setInterval(check, 5);
    child.once('exit', (code, signal) => {
      clearInterval(poll);
      reject(new Error(`socket-clients exited (code ${code}, signal ${signal}) with ${accepted.size} accepted`));
    });
    child.stdout.on('data', (d) => {
      out += d;
      if (/^ready \d+\n/.test(out)) ready = true;
      check();
    });
  });
  child.removeAllListeners('exit');
  const openMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const infos = process.getActiveResourcesInfo();
  const types = countTypes(infos);
  const top = [...types].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([t, n]) => `${t} ${n}`).join(', ');
  console.log(`\n${opts.sockets} connections open in ${openMs.toFixed(0)} ms; this process: ${openFds()} fds, ` +
    `${infos.length} active resources (${top})`);

  // Phase 1: sample cost at N sockets.
  agent = startAgent({ exporters: 'none', intervalMs: 3600000 });
  timeCalls(() => agent.sampleNow(), WARMUP);
  const sample = timeCalls(() => agent.sampleNow(), opts.samples);
  row('agent.sampleNow()', sample);
  const info = timeCalls(() => process.getActiveResourcesInfo(), opts.samples);
  row('process.getActiveResourcesInfo()', info);
  // What sampleNow() does first: list the resources, count them by type (fresh strings each
  // time, so every Map lookup hashes a new string).
  const listed = timeCalls(() => countTypes(process.getActiveResourcesInfo()), opts.samples);
  row('countTypes(process.getActiveResourcesInfo())', listed);
  // The same count over one array reused: string hashes cached, for comparison.
  row('countTypes(<one array, reused>)', timeCalls(() => countTypes(infos), opts.samples));
  const points = agent.sampleNow().points.length;
  const pct = (x) => `${((100 * x.median) / sample.median).toFixed(0)} %`;
  console.log(`  one snapshot has ${points} points; of a sample's median, getActiveResourcesInfo() alone is ` +
    `${pct(info)}, listing + counting by type ${pct(listed)}; the samplers and the snapshot the rest`);
  await uvscope.stop();

  // Phase 2: Prometheus render.
  agent = startAgent({ exporters: 'prometheus', intervalMs: 3600000, prometheus: { port: 0 } });
  const exporter = agent.exporters[0];
  if (!exporter || !exporter.registry) throw new Error('the prometheus exporter did not start');
  await exporter.ready;
  agent.sampleNow();
  const registry = exporter.registry;
  for (let i = 0; i < 5; i++) await registry.metrics();
  const render = await timeAsyncCalls(() => registry.metrics(), RENDERS);
  const text = await registry.metrics();
  console.log(`\nPrometheus text for one scrape (${text.length} bytes, ${text.split('\n').filter((l) => l && l[0] !== '#').length} series lines):`);
  row('registry.metrics()', render);
  await uvscope.stop();

  // Close everything.
  await stopClients();
  for (const s of accepted) s.destroy();
  await new Promise((resolve) => server.close(resolve));
  while (accepted.size > 0) await new Promise((resolve) => setImmediate(resolve));
  clearTimeout(timer);
  console.log(`\nclosed: agent stopped, client child stopped, server and its ${opts.sockets} sockets closed`);
}

main().catch(async (err) => {
  console.error(`sample-cost: ${err && err.stack ? err.stack : err}`);
  await stopClients().catch(() => {});
  process.exit(1);
});
