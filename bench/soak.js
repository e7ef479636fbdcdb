'use strict';

// A soak: steady HTTP and DNS lookups for a bounded time, WITHOUT and WITH the agent side by side,
// the RSS and heap series sampled every second, and their slope after warm-up.
//
//   node bench/soak.js [--seconds 60] [--warmup 15] [--rate 200] [--names 50]
//
// Each child (bench/fixtures/soak-app.js) serves HTTP and calls itself --rate times a second
// (keep-alive, new connections and fetch), and makes --rate lookups a second over --names
// hostnames. The names come from a DNS server this bench runs on 127.0.15.4:53 through a private
// mount namespace (root and unshare); without one the children look up localhost. The agent runs
// with its defaults (1 s interval, Prometheus on a free port, findings). Every second each child
// measures itself after a full GC. After --warmup seconds, the slope of each series is fitted by
// least squares and printed in KB per minute: a leak shows as a steady positive slope with the
// agent and not without. Bounded: --seconds (+ a few s to start and stop; watchdog +60 s).

const path = require('path');
const { spawn } = require('child_process');
const { spawnInNamespace, resolvConf, namespaceSupport } = require('../support/namespace');
const { createDnsServer } = require('../support/dns-server');
const { scrubEnv, childOutput } = require('../support/processes');

const REPO = path.resolve(__dirname, '..');
const APP = path.join(__dirname, 'fixtures', 'soak-app.js');
const NAMESERVER = '127.0.15.4';

function parseArgs(argv) {
  const opts = { seconds: 60, warmup: 15, rate: 200, names: 50 };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(seconds|warmup|rate|names)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]} (see the top of ${__filename})`);
    opts[m[1]] = Number(m[2] !== undefined ? m[2] : argv[++i]);
  }
  if (!(opts.warmup < opts.seconds - 5)) throw new Error('--warmup must end at least 5 s before --seconds');
  return opts;
}

async function runChild(withAgent, opts, namespace) {
  // The shell's UVSCOPE_* settings pass through: only NODE_OPTIONS is dropped.
  const env = scrubEnv({ RATE: String(opts.rate), SECONDS_TOTAL: String(opts.seconds), NAMES: String(namespace ? opts.names : 0), UVSCOPE_PROMETHEUS_PORT: '0' }, () => false);
  const args = ['--expose-gc', ...(withAgent ? ['--require', path.join(REPO, 'register.js')] : []), APP];
  const child = namespace
    ? spawnInNamespace({ resolvConf: resolvConf({ nameserver: NAMESERVER }), args, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const { code, stdout, stderr, timedOut } = await childOutput(child, (opts.seconds + 60) * 1000);
  if (timedOut) throw new Error(`soak child overran\n${stderr}`);
  if (code !== 0) throw new Error(`soak child exited ${code}: ${stderr}`);
  const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
  return { series: lines.filter((l) => !l.done), totals: lines.find((l) => l.done) };
}

/** Least-squares slope of y over t (per second). */
function slope(points) {
  const n = points.length;
  const mt = points.reduce((a, p) => a + p.t, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.t - mt) * (p.y - my);
    den += (p.t - mt) ** 2;
  }
  return den ? num / den : 0;
}

const mib = (b) => (b / 1048576).toFixed(1);

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const namespace = namespaceSupport().ok;
  let server = null;
  if (namespace) {
    server = await createDnsServer({ address: NAMESERVER, port: 53 });
    server.setName('*.soak.bench', { a: '127.0.0.1' });
  } else {
    console.log(`no private mount namespace (${namespaceSupport().reason}): the children look up localhost`);
  }
  try {
    console.log(`node ${process.version}; ${opts.seconds} s, ${opts.rate} requests and ${opts.rate} lookups a second${namespace ? ` over ${opts.names} names` : ''}; slopes after ${opts.warmup} s`);
    const [without, withAgent] = await Promise.all([runChild(false, opts, namespace), runChild(true, opts, namespace)]);
    for (const [label, r] of [['without', without], ['with the agent', withAgent]]) {
      console.log(`\n${label}: ${r.totals.requests} requests, ${r.totals.lookups} lookups, ${r.totals.errors} errors`);
      console.log('   t(s)  rss(MiB)  heapUsed(MiB)  heapTotal(MiB)');
      for (const p of r.series) console.log(`  ${p.t.toFixed(0).padStart(5)} ${mib(p.rss).padStart(9)} ${mib(p.heapUsed).padStart(14)} ${mib(p.heapTotal).padStart(15)}`);
      const after = r.series.filter((p) => p.t >= opts.warmup);
      for (const k of ['rss', 'heapUsed']) {
        const s = slope(after.map((p) => ({ t: p.t, y: p[k] })));
        console.log(`  ${k} slope after ${opts.warmup} s: ${(s * 60 / 1024).toFixed(1)} KB/min (${after.length} samples)`);
      }
    }
  } finally {
    if (server) await server.close();
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}

module.exports = { slope };
