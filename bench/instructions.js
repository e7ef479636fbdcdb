'use strict';

// Instructions per request (user space, counted by valgrind's callgrind) of an HTTP server, with
// no agent and with each agent, next to each other. A count, not a time: runs of the same code
// agree within about 1 %, where CPU time per request on a shared 2-core machine spreads by ±30 %
// between variants (bench/peers.js), so the agents can be ranked here. It is not CPU time: it
// leaves out the kernel and cache misses.
//
//   node bench/instructions.js [--servers hello,lookup] [--only none,uvscope,prom-client,otel]
//                              [--requests 1000] [--warmup 2000] [--runs 1]
//
// Servers (bench/fixtures/): hello (hello-server.js), await (await-server.js: a handler with two
// awaits, the tracer bench's app), lookup (lookup-server.js: a handler that awaits and looks up
// localhost with dns.lookup, from /etc/hosts).
// Variants:
//   none         no agent
//   uvscope      --require register.js, defaults (1 s sampling, Prometheus exporter), the text
//                its endpoint serves at /metrics rendered every second in-process
//                (bench/fixtures/peers/uvscope-read.js, as in bench/peers.js)
//   prom-client  collectDefaultMetrics(), rendered every second (bench/fixtures/peers/prom-client.js)
//   otel         @opentelemetry/instrumentation-runtime-node on an SDK reader collecting every
//                second (bench/fixtures/peers/otel-runtime-node.js)
//   off, armed   uvscope with no exporter and its sample an hour away, tracer off / armed
//                (UVSCOPE_TRACER=on): the cost per request alone, for the tracer
// The agents' periodic work (a sample, a render, a 10 ms timer) is time-based: under callgrind
// (about 50 times slower) each request takes ~10 ms of wall time, so the count per request
// includes that work as it falls per 10 ms, for every agent alike; a real server at 1000 req/s
// pays it per request about ten times less.
//
// Each variant: the server starts under callgrind, serves --warmup requests (counted and thrown
// away: V8 optimizes the hot code meanwhile), then --requests requests, one at a time on one
// keep-alive connection (so every variant serves a request per turn of its loop, however slow it
// runs), and the count between the two is divided by the requests. Two variants run at once (2
// CPUs). Printed per server and variant: instructions per request on the main thread and on all
// threads, the same added to none's, and with --runs N the range over runs (each run is a fresh
// server). Needs valgrind: without it, says so and exits 0. Bounded by a watchdog.

const path = require('path');
const fs = require('fs');
const os = require('os');
const http = require('http');
const { spawn, execFileSync } = require('child_process');
const { cleanEnv, firstLine, stopChild, Children, watchdog } = require('../support/processes');

const REPO = path.resolve(__dirname, '..');
const REGISTER = path.join(REPO, 'register.js');
const FIXTURES = path.join(__dirname, 'fixtures');
const PEERS = path.join(FIXTURES, 'peers');
const SERVERS = {
  hello: path.join(FIXTURES, 'hello-server.js'),
  await: path.join(FIXTURES, 'await-server.js'),
  lookup: path.join(FIXTURES, 'lookup-server.js'),
};
const QUIET = { UVSCOPE_EXPORTERS: 'none', UVSCOPE_INTERVAL_MS: '3600000' };
const VARIANTS = [
  { name: 'none', label: 'no agent', preloads: [] },
  { name: 'uvscope', label: 'uvscope (defaults)', preloads: [REGISTER, path.join(PEERS, 'uvscope-read.js')], env: { UVSCOPE_PROMETHEUS_PORT: '0' } },
  { name: 'prom-client', label: 'prom-client defaults', preloads: [path.join(PEERS, 'prom-client.js')] },
  { name: 'otel', label: 'OTel runtime-node', preloads: [path.join(PEERS, 'otel-runtime-node.js')] },
  { name: 'off', label: 'uvscope, tracer off', preloads: [REGISTER], env: { ...QUIET, UVSCOPE_TRACER: 'off' } },
  { name: 'armed', label: 'uvscope, tracer armed', preloads: [REGISTER], env: { ...QUIET, UVSCOPE_TRACER: 'on' } },
];
const USAGE = 'node bench/instructions.js [--servers hello,lookup] [--only none,uvscope,prom-client,otel] [--requests 1000] [--warmup 2000] [--runs 1]';

function parseList(flag, value, known) {
  const list = String(value).split(',').filter(Boolean);
  const unknown = list.filter((n) => !known.includes(n));
  if (unknown.length || !list.length) throw new Error(`--${flag}: names from ${known.join(', ')}, got ${value}`);
  return list;
}

function parseArgs(argv) {
  const opts = { requests: 1000, warmup: 2000, runs: 1, servers: ['hello', 'lookup'], only: ['none', 'uvscope', 'prom-client', 'otel'] };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(requests|warmup|runs|only|servers)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]}: ${USAGE}`);
    const value = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'only') opts.only = parseList('only', value, VARIANTS.map((v) => v.name));
    else if (m[1] === 'servers') opts.servers = parseList('servers', value, Object.keys(SERVERS));
    else if (m[1] === 'runs') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1 || n > 5) throw new Error('--runs: an integer from 1 to 5');
      opts.runs = n;
    } else {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 100 || n > 100000) throw new Error(`--${m[1]}: an integer from 100 to 100000`);
      opts[m[1]] = n;
    }
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

/** Instructions per request of one variant on one server: { main, all } (main thread, every thread). */
async function measure(job, opts, dir) {
  const { variant, server } = job;
  const tag = `${server}.${variant.name}.${job.run}`;
  const out = path.join(dir, `callgrind.${tag}`);
  const env = cleanEnv(variant.env || {});
  const preloads = variant.preloads.flatMap((p) => ['--require', p]);
  const args = ['--tool=callgrind', '--separate-threads=yes', '--smc-check=all-non-file', `--callgrind-out-file=${out}`,
    process.execPath, ...preloads, SERVERS[server]];
  const child = children.track(spawn('valgrind', args, { env, stdio: ['ignore', 'pipe', 'ignore'] }));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const port = Number(await firstLine(child, `${tag} server`));
    await serve(port, opts.warmup, agent);
    execFileSync('callgrind_control', ['--zero', String(child.pid)], { stdio: 'ignore' });
    await serve(port, opts.requests, agent);
    execFileSync('callgrind_control', ['--dump', String(child.pid)], { stdio: 'ignore' });
  } finally {
    agent.destroy();
    await stopChild(child);
  }
  // One file per thread for the dump (out.<dump>-<thread>); thread 01 is the main thread.
  const files = fs.readdirSync(dir).filter((f) => f.startsWith(`callgrind.${tag}.`)).sort();
  let main = 0;
  let all = 0;
  for (const f of files) {
    const m = /^(?:summary|totals):\s+(\d+)/m.exec(fs.readFileSync(path.join(dir, f), 'utf8'));
    if (!m) continue;
    all += Number(m[1]);
    if (/-0*1$/.test(f)) main += Number(m[1]);
  }
  if (!all || !main) throw new Error(`${tag}: no callgrind counts in ${dir} (${files.join(', ') || 'no files'})`);
  return { main: main / opts.requests, all: all / opts.requests };
}

const range = (xs) => [Math.min(...xs), Math.max(...xs)];
const med = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Per server, per variant: counts over runs, and added to none's of the same run. */
function summarize(jobs, opts) {
  const rows = [];
  for (const server of opts.servers) {
    for (const name of opts.only) {
      const mine = jobs.filter((j) => j.server === server && j.variant.name === name);
      const none = (run) => jobs.find((j) => j.server === server && j.variant.name === 'none' && j.run === run);
      const addedMain = mine.filter((j) => none(j.run)).map((j) => j.count.main - none(j.run).count.main);
      const addedAll = mine.filter((j) => none(j.run)).map((j) => j.count.all - none(j.run).count.all);
      rows.push({
        server,
        variant: name,
        label: mine[0].variant.label,
        main: med(mine.map((j) => j.count.main)),
        mainRange: range(mine.map((j) => j.count.main)),
        all: med(mine.map((j) => j.count.all)),
        allRange: range(mine.map((j) => j.count.all)),
        addedMain: addedMain.length ? med(addedMain) : null,
        addedMainRange: addedMain.length ? range(addedMain) : null,
        addedAll: addedAll.length ? med(addedAll) : null,
        addedAllRange: addedAll.length ? range(addedAll) : null,
      });
    }
  }
  return rows;
}

function print(rows, opts) {
  const k = (n) => `${Math.round(n / 100) / 10}k`;
  const rg = (r) => (opts.runs > 1 ? ` (${k(r[0])}..${k(r[1])})` : '');
  for (const server of opts.servers) {
    console.log(`\n${server} server (bench/fixtures/${path.basename(SERVERS[server])}): instructions per request`);
    console.log(`${'variant'.padEnd(24)} ${'main thread'.padStart(22)} ${'all threads'.padStart(22)} ${'added, main'.padStart(22)} ${'added, all'.padStart(22)}`);
    for (const r of rows.filter((x) => x.server === server)) {
      const added = (v, range) => (v === null ? '' : `${v >= 0 ? '+' : ''}${k(v)}${rg(range)}`);
      console.log(`${r.label.padEnd(24)} ${`${k(r.main)}${rg(r.mainRange)}`.padStart(22)} ${`${k(r.all)}${rg(r.allRange)}`.padStart(22)} ${added(r.addedMain, r.addedMainRange).padStart(22)} ${added(r.addedAll, r.addedAllRange).padStart(22)}`);
    }
    const uv = rows.find((x) => x.server === server && x.variant === 'uvscope');
    const pc = rows.find((x) => x.server === server && x.variant === 'prom-client');
    if (uv && pc && uv.addedAll !== null && pc.addedAll !== null) {
      console.log(uv.addedAll <= pc.addedAll
        ? `uvscope adds no more than prom-client's defaults (all threads: ${k(uv.addedAll)} vs ${k(pc.addedAll)})`
        : `uvscope adds more than prom-client's defaults (all threads: ${k(uv.addedAll)} vs ${k(pc.addedAll)}, +${k(uv.addedAll - pc.addedAll)})`);
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
  // Under callgrind about 10 ms a request, plus ~30 s to start an agent: in pairs.
  const budgetMs = Math.ceil(jobs.length / 2) * ((opts.requests + opts.warmup) * 40 + 90000);
  watchdog('instructions bench', budgetMs, () => [...children]);
  console.log(`instructions per request: node ${process.version}, ${os.cpus().length} CPU(s), load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; ` +
    `${opts.warmup} requests of warm-up, ${opts.requests} counted, one at a time on one keep-alive connection; ${opts.runs} run(s)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-instructions-'));
  try {
    for (let i = 0; i < jobs.length; i += 2) {
      const pair = jobs.slice(i, i + 2);
      const counts = await Promise.all(pair.map((j) => measure(j, opts, dir)));
      pair.forEach((j, n) => (j.count = counts[n]));
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  print(summarize(jobs, opts), opts);
  const ratio = (a, b, key) => {
    const rows = summarize(jobs, opts);
    return opts.servers.map((server) => {
      const x = rows.find((r) => r.server === server && r.variant === a);
      const y = rows.find((r) => r.server === server && r.variant === b);
      return x && y ? `${server} ${(x[key] / y[key]).toFixed(3)}` : null;
    }).filter(Boolean).join(', ');
  };
  for (const [a, b] of [['off', 'none'], ['armed', 'none'], ['armed', 'off']]) {
    if (opts.only.includes(a) && opts.only.includes(b)) console.log(`ratio ${a} / ${b}: main thread ${ratio(a, b, 'main')}; all threads ${ratio(a, b, 'all')}`);
  }
}

main().catch((err) => {
  console.error(err.stack);
  children.killAll();
  process.exit(1);
});
