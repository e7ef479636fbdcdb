'use strict';

// What following the spans open costs (a block's victims, lib/core/block-victims.js): CPU per
// request of an HTTP server traced by the OpenTelemetry SDK (bench/fixtures/otel-server.js: the
// http instrumentation's spans, set up after uvscope), at a fixed rate, in variants alternated in
// one run: without uvscope; uvscope with UVSCOPE_OTLP_TRACE_ATTRIBUTES=false (no span processor of
// uvscope's); uvscope (its processor adds and deletes each span in a Set); with --before, uvscope
// from another checkout (e.g. main in a worktree: the processor without the victims part). Then,
// in this process (see inProcess()): CPU per span with uvscope's processor under the provider and
// without it, and one block's record with N spans open; and in a child (fixtures/dd-spans.js), CPU
// per dd-trace span with and without uvscope's tagger.
//
//   node bench/victims.js [--rounds 3] [--duration 5] [--rate 400] [--connections 10] [--before CHECKOUT]
//
// As bench/tracer.js: CPU time from /proc/<pid>/task/*/schedstat; the servers run at the same
// time, each under its own load at the same rate, fresh each round. Bounded: rounds x (duration +
// 4 s) plus child starts; a watchdog aborts 30 s past that.

const fs = require('fs');
const path = require('path');
const os = require('os');
const { spawn, spawnSync } = require('child_process');
const { scrubEnv, stopChild, serverPort, Children, processCpuNs, watchdog } = require('../support/processes');
const autocannon = require('autocannon');

const REPO = path.resolve(__dirname, '..');
const SERVER = path.join(__dirname, 'fixtures', 'otel-server.js');
const WARMUP_S = 1;

function parseArgs(argv) {
  const opts = { rounds: 3, duration: 5, rate: 400, connections: 10, before: null };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(rounds|duration|rate|connections|before)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]}: node bench/victims.js [--rounds 3] [--duration 5] [--rate 400] [--connections 10] [--before CHECKOUT]`);
    const raw = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'before') {
      if (!raw || !fs.existsSync(path.join(raw, 'register.js'))) throw new Error(`--before needs a uvscope checkout, got ${raw}`);
      opts.before = path.resolve(raw);
      continue;
    }
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || (m[1] === 'rate' && n > 20000)) throw new Error(`--${m[1]}: a positive integer (rate at most 20000)`);
    opts[m[1]] = n;
  }
  return opts;
}

function variants(opts) {
  const list = [
    { name: 'without', register: null, env: {} },
    { name: 'uvscope, attributes off', register: REPO, env: { UVSCOPE_OTLP_TRACE_ATTRIBUTES: 'false' } },
    { name: 'uvscope', register: REPO, env: {} },
  ];
  if (opts.before) list.push({ name: 'uvscope before', register: opts.before, env: {} });
  return list;
}

const children = new Children();

async function startServer(variant) {
  // No endpoint: nothing scrapes during the load; the agent still samples every second.
  const env = scrubEnv(variant.register ? { ...variant.env, UVSCOPE_EXPORTERS: 'none' } : {});
  const args = variant.register ? ['--require', path.join(variant.register, 'register.js'), SERVER] : [SERVER];
  const child = children.track(spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] }));
  return { child, port: await serverPort(child) };
}

const load = (port, opts, duration) => autocannon({ url: `http://127.0.0.1:${port}/`, connections: opts.connections, duration, overallRate: opts.rate });

async function runRound(opts, list) {
  const servers = [];
  try {
    for (const variant of list) servers.push(await startServer(variant));
    await Promise.all(servers.map(({ port }) => load(port, opts, WARMUP_S)));
    const cpu0 = servers.map(({ child }) => processCpuNs(child.pid));
    const results = await Promise.all(servers.map(({ port }) => load(port, opts, opts.duration)));
    return servers.map(({ child }, i) => {
      const r = results[i];
      return { cpuUs: (processCpuNs(child.pid) - cpu0[i]) / 1e3 / r.requests.total, total: r.requests.total, problems: r.errors + r.timeouts + r.non2xx };
    });
  } finally {
    await Promise.all(servers.map(({ child }) => stopChild(child, { signal: 'SIGTERM', graceMs: 5000 })));
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * In this process, with real SDK spans under a batch processor (its exporter drops them): CPU ns
 * per span with uvscope's processor under the provider (this checkout's, and --before's) minus
 * without it, median over alternated batches of 8 concurrent requests (a server span and two
 * children each, the children ending at once, the server spans in start order); and µs per block
 * record with n spans open, every one a victim (median of reps).
 */
function inProcess(counts, before) {
  const diagnosticsChannel = require('diagnostics_channel');
  const { createRequire } = require('module');
  const req = createRequire(path.join(REPO, 'package.json'));
  const { NodeTracerProvider, BatchSpanProcessor } = req('@opentelemetry/sdk-trace-node');
  const { published } = require('../lib/core/channels');
  const dropping = { export: (spans, done) => done({ code: 0 }), shutdown: () => Promise.resolve() };
  const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] });
  provider.register();
  const tracer = provider.getTracer('bench');
  const create = (dir) => require(path.join(dir, 'exporters', 'otlp', 'spans')).createSpanAttributer({ startChannel: diagnosticsChannel.channel('uvscope:bench.unused'), poolSize: () => 4 });
  const attributer = (dir) => {
    const a = create(dir);
    a.close(); // attached only while its batches run (attach() puts the processor back)
    return a;
  };
  const variants = [{ name: 'none', a: null }, { name: 'uvscope', a: attributer(REPO) }];
  if (before) variants.push({ name: 'uvscope before', a: attributer(before) });
  const SPANS = 24000;
  const batch = () => {
    const t0 = process.cpuUsage();
    for (let i = 0; i < SPANS / 24; i++) {
      const roots = [];
      for (let k = 0; k < 8; k++) roots.push(tracer.startSpan('request'));
      for (let k = 0; k < 16; k++) tracer.startSpan('child').end();
      for (const r of roots) r.end();
    }
    const d = process.cpuUsage(t0);
    return ((d.user + d.system) * 1e3) / SPANS;
  };
  const ns = variants.map(() => []);
  for (let rep = 0; rep < 31; rep++) {
    variants.forEach(({ a }, i) => {
      if (a) a.attach();
      ns[i].push(batch());
      if (a) a.close();
    });
  }
  const perSpan = variants.map(({ name }, i) => ({ name, ns: median(ns[i]), diff: median(ns[i].map((x, round) => x - ns[0][round])) }));

  const victims = create(REPO);
  const blocks = [];
  let tagged0 = 0;
  for (const n of counts) {
    const times = [];
    for (let rep = 0; rep < 7; rep++) {
      const first = performance.timeOrigin + performance.now();
      const spans = Array.from({ length: n }, () => tracer.startSpan('victim'));
      // A block from before the first span to 10 ms after the last: every span open across it.
      const end = performance.timeOrigin + performance.now() + 10;
      const record = { start: first - 50, end, seconds: (end - first + 50) / 1e3, cause: 'code', blocker: { name: 'parse', caller: 'src/a.js:1' }, route: null };
      const t0 = process.hrtime.bigint();
      published.eventloopBlock.publish(record);
      times.push(Number(process.hrtime.bigint() - t0) / 1e3);
      for (const s of spans) s.end();
    }
    blocks.push({ n, us: median(times), tagged: victims.victims.tagged - tagged0 });
    tagged0 = victims.victims.tagged;
  }
  victims.close();
  return { perSpan, blocks };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const list = variants(opts);
  watchdog('bench/victims.js', (opts.rounds * (opts.duration + WARMUP_S + 4) + 30) * 1000, () => children);
  console.log(`uvscope victims benchmark: node ${process.version}, ${os.cpus().length} CPU(s), load ${os.loadavg()[0].toFixed(2)}; ${opts.rate} req/s over ${opts.connections} connections, ` +
    `${WARMUP_S} s warm-up + ${opts.duration} s, ${opts.rounds} round(s)${opts.before ? `; before: ${opts.before}` : ''}`);
  const cpu = list.map(() => []);
  for (let round = 0; round < opts.rounds; round++) {
    const rs = await runRound(opts, list);
    rs.forEach((r, i) => {
      if (r.problems) throw new Error(`${list[i].name}: ${r.problems} errors`);
      cpu[i].push(r.cpuUs);
    });
    console.log(`round ${round + 1}: ${rs.map((r, i) => `${list[i].name} ${r.cpuUs.toFixed(1)} µs/req (${r.total} req)`).join(', ')}`);
  }
  const ratio = (a, b) => cpu[a].map((x, round) => x / cpu[b][round]);
  const say = (a, b) => {
    const rs = ratio(a, b);
    console.log(`median CPU/request ratio, ${list[a].name} / ${list[b].name}: ${median(rs).toFixed(3)} (rounds: ${rs.map((r) => r.toFixed(3)).join(', ')})`);
  };
  for (let i = 1; i < list.length; i++) say(i, 0);
  say(2, 1);
  if (opts.before) say(2, 3);
  console.log(`median CPU/request without: ${median(cpu[0]).toFixed(1)} µs (the SDK's spans included in every variant)`);
  const { perSpan, blocks } = inProcess([100, 1000, 4096], opts.before);
  const sdk = require(path.join(REPO, 'node_modules', '@opentelemetry', 'sdk-trace-base', 'package.json')).version;
  console.log(`a span (in process, SDK ${sdk}, CPU time): ${perSpan.map((v) => `${v.name} ${v.ns.toFixed(0)} ns${v.name === 'none' ? '' : ` (+${v.diff.toFixed(0)})`}`).join(', ')}`);
  for (const { n, us, tagged } of blocks) console.log(`one block's record, ${n} spans open, every one a victim (${tagged / 7} tagged a record): ${us.toFixed(0)} µs`);
  const dd = spawnSync(process.execPath, [path.join(__dirname, 'fixtures', 'dd-spans.js')], { encoding: 'utf8', timeout: 120000 });
  if (dd.status !== 0) throw new Error(`bench/fixtures/dd-spans.js: ${dd.stderr}`);
  const d = JSON.parse(dd.stdout.trim().split('\n').pop());
  console.log(`a dd-trace ${d.version} span (child process, CPU time): ${d.without.toFixed(0)} ns without uvscope's tagger, ${d.with.toFixed(0)} ns with it (+${d.diff.toFixed(0)})`);
}

main().catch((err) => {
  console.error(err.stack);
  children.killAll();
  process.exit(1);
});
