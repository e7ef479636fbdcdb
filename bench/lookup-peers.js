'use strict';

// The main thread's cost per dns.lookup next to the peers that also time every lookup: no agent,
// uvscope (its defaults), the OpenTelemetry SDK (a tracer provider, batch processor) with
// @opentelemetry/instrumentation-dns, and dd-trace's dns plugin (dd-trace 6, Node 22+ only: it
// does nothing on Node 20), all in one run.
//
//   node bench/lookup-peers.js [--rounds 3] [--count 100000] [--warmup 20000]
//                              [--resolutions noop,localhost] [--variants none,uvscope,otel,dd-trace]
//                              [--tiers optimized,interpreted] [--instructions] [--json]
//
// Resolutions: `noop`, a lookup that costs nothing (bench/fixtures/lookup-peers/noop-dns.js,
// preloaded before the peer, answers from a table on the next tick; the peers wrap it as they wrap
// Node's), so the figure is the wrappers' own; `localhost`, Node's real lookup of localhost
// (getaddrinfo on the pool, /etc/hosts), its main-thread part. Tiers: `optimized` (V8's defaults,
// after --warmup lookups), `interpreted` (--no-opt --no-maglev, V8's interpreter and baseline
// code, as bench/lookup-own.js and bench/instructions.js count; --count and --warmup divided by 10).
// Per round each variant runs in a child of its own, one at a time, in a rotated order; a child
// counts the main thread's CPU (schedstat) over its counted lookups (bench/fixtures/lookup-peers/
// app.js). --instructions: the main thread's instructions under callgrind instead (one round,
// --count 2000 after 1000; callgrind's count is the same whatever the load; uvscope's sample an
// hour away, since the counted lookups take seconds there). Each child also
// checks that its peer saw every lookup (uvscope's timed lookups, OpenTelemetry's spans, the
// spans dd-trace sent to the bench's stand-in agent): a row whose peer missed lookups is an error.
// Printed: per resolution and tier, each variant's cost per lookup (median over rounds, range) and
// the cost it adds to no agent's, with uvscope's added cost against the cheaper peer's.

const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');
const { spawnSync, spawn } = require('child_process');
const { median, machine } = require('./fixtures/stats');
const { scrubEnv, childOutput, Children, watchdog } = require('../support/processes');

const DIR = path.join(__dirname, 'fixtures', 'lookup-peers');
const APP = path.join(DIR, 'app.js');
const MAJOR = Number(process.versions.node.split('.')[0]);

const VARIANTS = {
  none: [],
  uvscope: [path.join(DIR, 'uvscope-dns.js')],
  otel: [path.join(DIR, 'otel-dns.js')],
  'dd-trace': [path.join(DIR, 'dd-dns.js')],
};
const TIERS = { optimized: [], interpreted: ['--no-opt', '--no-maglev'] };

function parseArgs(argv) {
  const opts = { rounds: 3, count: 100000, warmup: 20000, resolutions: ['noop', 'localhost'], variants: Object.keys(VARIANTS), tiers: ['optimized', 'interpreted'], instructions: false, json: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--instructions' || argv[i] === '--json') {
      opts[argv[i].slice(2)] = true;
      continue;
    }
    const m = /^--(rounds|count|warmup|resolutions|variants|tiers)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]}`);
    const raw = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'resolutions' || m[1] === 'variants' || m[1] === 'tiers') {
      const known = m[1] === 'resolutions' ? ['noop', 'localhost'] : Object.keys(m[1] === 'variants' ? VARIANTS : TIERS);
      opts[m[1]] = String(raw).split(',');
      for (const x of opts[m[1]]) if (!known.includes(x)) throw new Error(`--${m[1]}: ${x} is not one of ${known.join(', ')}`);
    } else {
      const n = Number(raw);
      if (!Number.isInteger(n) || n < 1) throw new Error(`--${m[1]}: a positive integer, got ${raw}`);
      opts[m[1]] = n;
    }
  }
  if (MAJOR < 22) opts.variants = opts.variants.filter((v) => v !== 'dd-trace');
  if (!opts.variants.includes('none')) opts.variants.unshift('none');
  if (opts.instructions) Object.assign(opts, { rounds: 1, count: Math.min(opts.count, 2000), warmup: Math.min(opts.warmup, 1000) });
  return opts;
}

/** A stand-in Datadog agent on 127.0.0.1: answers every trace payload, counts the traces. */
function startTraceAgent() {
  let traces = 0;
  const server = http.createServer((req, res) => {
    traces += Number(req.headers['x-datadog-trace-count']) || 0;
    req.resume().on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"rate_by_service":{}}');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    port: server.address().port,
    take() {
      const n = traces;
      traces = 0;
      return n;
    },
    close: () => server.close(),
  })));
}

const children = new Children();
/** The share of lookups dd-trace's spans reached the stand-in agent for, per run. */
const sent = [];

async function runOne(variant, resolution, tier, opts, agent) {
  const interpreted = tier === 'interpreted' && !opts.instructions;
  const count = interpreted ? Math.max(1, Math.round(opts.count / 10)) : opts.count;
  const warmup = interpreted ? Math.max(1, Math.round(opts.warmup / 10)) : opts.warmup;
  const preloads = [...(resolution === 'noop' ? [path.join(DIR, 'noop-dns.js')] : []), ...VARIANTS[variant]];
  const nodeArgs = [...TIERS[tier], ...preloads.flatMap((p) => ['--require', p]), APP];
  let cg = null;
  let cmd = process.execPath;
  let args = nodeArgs;
  if (opts.instructions) {
    cg = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-lookup-peers-'));
    cmd = 'valgrind';
    args = ['--tool=callgrind', '--dump-instr=no', '--smc-check=all-non-file', '--separate-threads=yes', `--callgrind-out-file=${path.join(cg, 'cg.out')}`, process.execPath, ...nodeArgs];
  }
  const env = scrubEnv({
    LOOKUP_COUNT: String(count),
    LOOKUP_WARMUP: String(warmup),
    LOOKUP_NOOP: resolution === 'noop' ? '1' : '0',
    LOOKUP_COUNTER: opts.instructions ? 'callgrind' : 'cpu',
    UVSCOPE_EXPORTERS: 'none',
    UVSCOPE_SNAPSHOT_PORT: '0',
    // Under callgrind 2,000 lookups of localhost take many seconds: the agent's samples (its
    // clock's work, in the idle figures) would be counted as the lookups'. An hour away there.
    ...(opts.instructions ? { UVSCOPE_INTERVAL_MS: '3600000' } : {}),
    BENCH_TRACE_AGENT_PORT: String(agent.port),
    DD_TRACE_STARTUP_LOGS: 'false',
    DD_INSTRUMENTATION_TELEMETRY_ENABLED: 'false',
  }, (k) => k.startsWith('UVSCOPE_') || k.startsWith('DD_') || k.startsWith('OTEL_') || k === 'UV_THREADPOOL_SIZE');
  try {
    const child = children.track(spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] }));
    const { code, stdout, stderr } = await childOutput(child, (opts.instructions ? 30 : 5) * 60 * 1000);
    if (code !== 0) throw new Error(`${variant} (${resolution}, ${tier}) exited with ${code}: ${String(stderr).slice(-2000)}`);
    const out = JSON.parse(String(stdout).trim().split('\n').pop());
    const seen = variant === 'dd-trace' ? agent.take() : out.seen;
    // dd-trace made a span for every lookup, but at 100,000s a run its writer sent some 80 % of
    // them (it drops what is over its buffer); every one in runs of a few thousand.
    const least = variant === 'dd-trace' ? 0.5 * out.lookups : out.lookups;
    if (variant !== 'none' && !(seen >= least)) throw new Error(`${variant} (${resolution}, ${tier}) saw ${seen} of ${out.lookups} lookups`);
    if (variant === 'dd-trace') sent.push(seen / out.lookups);
    let perLookup = out.ns / count / 1000; // µs
    if (cg) {
      const text = fs.readFileSync(path.join(cg, 'cg.out.1-01'), 'utf8');
      const m = /^summary: (\d+)$/m.exec(text) || /^totals: (\d+)$/m.exec(text);
      perLookup = Number(m[1]) / count; // instructions
    }
    return perLookup;
  } finally {
    if (cg) fs.rmSync(cg, { recursive: true, force: true });
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.instructions && spawnSync('valgrind', ['--version']).status !== 0) throw new Error('--instructions needs valgrind');
  const runs = opts.resolutions.length * opts.tiers.length * opts.variants.length * opts.rounds;
  watchdog('bench/lookup-peers.js', runs * (opts.instructions ? 30 * 60 : 5 * 60) * 1000, () => children);
  const before = machine();
  const agent = await startTraceAgent();
  const results = {};
  try {
    for (const resolution of opts.resolutions) {
      for (const tier of opts.tiers) {
        const per = Object.fromEntries(opts.variants.map((v) => [v, []]));
        for (let r = 0; r < opts.rounds; r++) {
          const order = opts.variants.map((_, k) => opts.variants[(k + r) % opts.variants.length]);
          for (const v of order) per[v].push(await runOne(v, resolution, tier, opts, agent));
        }
        results[`${resolution} ${tier}`] = per;
      }
    }
  } finally {
    agent.close();
  }
  const unit = opts.instructions ? 'instructions' : 'µs';
  const fmt = (x) => (opts.instructions ? Math.round(x).toLocaleString('en-US') : x.toFixed(2));
  if (opts.json) {
    console.log(JSON.stringify({ node: process.version, opts, results }));
    return;
  }
  console.log(`${before.date}, node ${process.version}, ${before.cpus} CPUs; load ${before.load} before, ${machine().load} after`);
  console.log(`main-thread ${unit} per dns.lookup('localhost'), one at a time; ${opts.rounds} round(s); median (range) and added to no agent's (the medians)`);
  for (const [key, per] of Object.entries(results)) {
    const none = median(per.none);
    const added = {};
    console.log(`-- ${key}`);
    for (const [v, xs] of Object.entries(per)) {
      added[v] = median(xs) - none;
      const range = xs.length > 1 ? ` (${fmt(Math.min(...xs))}..${fmt(Math.max(...xs))})` : '';
      console.log(`${v.padEnd(9)} ${fmt(median(xs)).padStart(9)}${range}${v === 'none' ? '' : `  added ${fmt(added[v])}`}`);
    }
    const peers = Object.keys(added).filter((v) => v !== 'none' && v !== 'uvscope');
    if (added.uvscope !== undefined && peers.length) {
      const cheaper = peers.reduce((a, b) => (added[a] <= added[b] ? a : b));
      // A peer whose rounds overlap no agent's adds nothing this run can tell from noise.
      const overlaps = Math.min(...per[cheaper]) <= Math.max(...per.none);
      console.log(overlaps
        ? `the cheaper peer (${cheaper}) overlaps no agent's range: not ranked`
        : `uvscope added / ${cheaper}'s (the cheaper peer): ${(added.uvscope / added[cheaper]).toFixed(2)} (target: at most 0.5)`);
    }
  }
  if (sent.length) console.log(`dd-trace's spans that reached the stand-in agent: ${sent.map((x) => `${(100 * x).toFixed(0)} %`).join(', ')}`);
}

main().catch((err) => {
  console.error(err);
  children.killAll();
  process.exit(1);
});
