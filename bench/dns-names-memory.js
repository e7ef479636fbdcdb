'use strict';

// Memory per kept hostname: RSS and heap growth of an app that looks up many distinct hostnames,
// WITHOUT and WITH the agent, side by side in one run.
//
//   node bench/dns-names-memory.js [--names 300,10000] [--seconds 70] [--per-second 300] [--max-names M] [--semi-space MB]
//
// The names (n0.names.bench, n1.names.bench, ...) are answered by a DNS server this bench runs on
// 127.0.15.3:53 (a wildcard zone), seen by the children through a private mount namespace whose
// resolv.conf points at it (test/helpers/namespace.js): never a real name. Needs root and unshare.
//
// For each N in --names, two children run at the same time: the app alone, and the app with the
// agent preloaded (defaults: 1 s interval, Prometheus exporter on a free port) and
// UVSCOPE_DNS_MAX_NAMES=N for N <= 1000 (the default, 100, above: the rest count as _other; or
// --max-names M for every N). Each
// looks up all N names once, then --per-second names a second, rotating through all of them, for
// --seconds (70 by default: the findings' 60 s window fills). Each measures itself after a full GC
// (--expose-gc) before its first lookup and at the end. Growth = end - start. Per kept name =
// (growth with - growth without) / names kept. Bounded: ~--seconds per N, plus the first pass.
//
// What RSS shows is mostly V8's young generation, not what the agent keeps: V8 doubles the new
// space (1 MiB up to 16 MiB a semi-space on Node 20) each time the bytes that survived scavenges
// since the last doubling exceed its size, and the agent's snapshot of the last interval (every
// kept hostname's histogram and details) survives until the next sample. An app that allocates
// anything much already runs at that size. --semi-space MB fixes the young generation of both
// children (--min-semi-space-size = --max-semi-space-size = MB) so the RSS difference is the
// agent's own; heapUsed after a full GC is what the agent keeps either way.

const path = require('path');
const { spawnInNamespace, resolvConf, namespaceSupport } = require('../support/namespace');
const { createDnsServer } = require('../support/dns-server');

const REPO = path.resolve(__dirname, '..');
const APP = path.join(__dirname, 'fixtures', 'names-app.js');
const NAMESERVER = '127.0.15.3';

function parseArgs(argv) {
  const opts = { names: [300, 10000], seconds: 70, perSecond: 300 };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(names|seconds|per-second|semi-space|max-names)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]} (see the top of ${__filename})`);
    const v = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'names') opts.names = v.split(',').map(Number);
    else if (m[1] === 'seconds') opts.seconds = Number(v);
    else if (m[1] === 'semi-space') opts.semiSpace = Number(v);
    else if (m[1] === 'max-names') opts.maxNames = Number(v);
    else opts.perSecond = Number(v);
  }
  return opts;
}

function runChild({ names, withAgent, opts }) {
  const env = {
    NAMES: String(names),
    PER_SECOND: String(Math.min(opts.perSecond, names)),
    SECONDS_TOTAL: String(opts.seconds),
    UVSCOPE_PROMETHEUS_PORT: '0',
    ...(withAgent ? { WITH_AGENT: '1' } : {}),
    ...(withAgent && (opts.maxNames || names <= 1000) ? { UVSCOPE_DNS_MAX_NAMES: String(opts.maxNames || names) } : {}),
  };
  for (const k of Object.keys(process.env)) if (k.startsWith('UVSCOPE_') && !(k in env)) env[k] = '';
  const young = opts.semiSpace ? [`--min-semi-space-size=${opts.semiSpace}`, `--max-semi-space-size=${opts.semiSpace}`] : [];
  const args = ['--expose-gc', ...young, ...(withAgent ? ['--require', path.join(REPO, 'register.js')] : []), APP];
  return new Promise((resolve, reject) => {
    const child = spawnInNamespace({ resolvConf: resolvConf({ nameserver: NAMESERVER }), args, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const watchdog = setTimeout(() => {
      process.kill(child.pid, 'SIGKILL');
      reject(new Error(`child (names ${names}, agent ${withAgent}) overran\n${err}`));
    }, (opts.seconds + 120) * 1000);
    child.on('close', (code) => {
      clearTimeout(watchdog);
      if (code !== 0) return reject(new Error(`child exited ${code}: ${err}`));
      resolve(JSON.parse(out.trim().split('\n').pop()));
    });
  });
}

const mib = (b) => `${(b / 1048576).toFixed(1)} MiB`;
const kb = (b) => `${(b / 1024).toFixed(1)} KB`;

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const support = namespaceSupport();
  if (!support.ok) {
    console.error(`bench/dns-names-memory.js needs a private mount namespace: ${support.reason}`);
    process.exitCode = 1;
    return;
  }
  const server = await createDnsServer({ address: NAMESERVER, port: 53 });
  server.setName('*.names.bench', { a: '127.0.0.1' });
  try {
    console.log(`node ${process.version}; ${opts.seconds} s per run, ${opts.perSecond} lookups/s after a first pass over all names; young generation ${opts.semiSpace ? `fixed at ${opts.semiSpace} MiB a semi-space` : 'as V8 sizes it'}`);
    for (const names of opts.names) {
      const [without, withAgent] = await Promise.all([runChild({ names, withAgent: false, opts }), runChild({ names, withAgent: true, opts })]);
      const grow = (r, k) => r.after[k] - r.before[k];
      const kept = withAgent.kept;
      console.log(`\n${names} hostnames (${withAgent.lookups} lookups with the agent, ${withAgent.errors} failed; ${kept} kept as labels)`);
      for (const k of ['rss', 'heapUsed', 'heapTotal']) {
        const extra = grow(withAgent, k) - grow(without, k);
        console.log(`  ${k.padEnd(9)} growth without ${mib(grow(without, k)).padStart(9)}, with ${mib(grow(withAgent, k)).padStart(9)}: ${mib(extra)} more, ${kb(extra / kept)} per kept name`);
      }
    }
  } finally {
    await server.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
