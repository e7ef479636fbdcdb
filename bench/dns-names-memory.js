'use strict';

// Memory per kept hostname: RSS and heap growth of an app that looks up many distinct hostnames,
// WITHOUT and WITH the agent, side by side in one run.
//
//   node bench/dns-names-memory.js [--names 300,10000] [--seconds 70] [--per-second 300] [--max-names M]
//                                  [--slope M] [--semi-space MB] [--trace-gc DIR]
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
// --slope M runs a third child at the same time: the agent with UVSCOPE_DNS_MAX_NAMES=M under the
// same lookups. --trace-gc DIR writes each child's V8 GC trace (--trace-gc-nvp) to a file there.
// Per kept name by slope = (growth with - growth at M) / (kept - kept at M): what one
// more kept name costs, apart from what the agent costs whatever it keeps.
//
// What RSS shows can be mostly V8's young generation rather than what the agent keeps: V8 doubles
// the new space (1 MiB up to 16 MiB a semi-space on Node 20) when the bytes that survived
// scavenges since the last doubling exceed its size, and shrinks it only while the allocation rate
// is low (under ~1 MB/s). Until 2026-11-23 every sample's snapshot held about 1 KB of new objects
// per kept hostname looked up in the interval, alive until the next sample, so they survived the
// scavenges in between (400 to 800 KB a scavenge at 300 kept names) and the young generation grew
// to its maximum; the DNS sampler now updates one set of objects per name in place, and the young
// generation stays as small as without the agent. So three measures: with minus without as V8
// sizes the young generation (what a user sees), --semi-space MB (both children's young
// generation fixed: --min-semi-space-size = --max-semi-space-size = MB, so the RSS difference is
// the agent's own) and --slope M (the derivative per kept name). RSS outside the V8 heap (glibc's
// arenas of the resolver threads) moves by about a MiB from run to run: repeat a figure. heapUsed
// after a full GC is what the agent keeps either way; newSpace is the young generation's size (part of heapTotal);
// external is memory outside the heap that V8 knows of (ArrayBuffers' backing stores).

const path = require('path');
const { spawnInNamespace, resolvConf, namespaceSupport } = require('../support/namespace');
const { createDnsServer } = require('../support/dns-server');
const { childOutput } = require('../support/processes');

const REPO = path.resolve(__dirname, '..');
const APP = path.join(__dirname, 'fixtures', 'names-app.js');
const NAMESERVER = '127.0.15.3';

function parseArgs(argv) {
  const opts = { names: [300, 10000], seconds: 70, perSecond: 300 };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(names|seconds|per-second|semi-space|max-names|slope|trace-gc)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]} (see the top of ${__filename})`);
    const v = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'names') opts.names = v.split(',').map(Number);
    else if (m[1] === 'seconds') opts.seconds = Number(v);
    else if (m[1] === 'semi-space') opts.semiSpace = Number(v);
    else if (m[1] === 'max-names') opts.maxNames = Number(v);
    else if (m[1] === 'slope') opts.slope = Number(v);
    else if (m[1] === 'trace-gc') opts.traceGc = v;
    else opts.perSecond = Number(v);
  }
  return opts;
}

async function runChild({ names, withAgent, opts, maxNames }) {
  const keep = maxNames || opts.maxNames || (names <= 1000 ? names : null);
  const env = {
    NAMES: String(names),
    PER_SECOND: String(Math.min(opts.perSecond, names)),
    SECONDS_TOTAL: String(opts.seconds),
    UVSCOPE_PROMETHEUS_PORT: '0',
    ...(withAgent ? { WITH_AGENT: '1' } : {}),
    ...(withAgent && keep ? { UVSCOPE_DNS_MAX_NAMES: String(keep) } : {}),
  };
  for (const k of Object.keys(process.env)) if (k.startsWith('UVSCOPE_') && !(k in env)) env[k] = '';
  const young = opts.semiSpace ? [`--min-semi-space-size=${opts.semiSpace}`, `--max-semi-space-size=${opts.semiSpace}`] : [];
  const args = ['--expose-gc', ...young, ...(opts.traceGc ? ['--trace-gc-nvp'] : []), ...(withAgent ? ['--require', path.join(REPO, 'register.js')] : []), APP];
  const child = spawnInNamespace({ resolvConf: resolvConf({ nameserver: NAMESERVER }), args, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const { code, stdout, stderr, timedOut } = await childOutput(child, (opts.seconds + 120) * 1000);
  if (timedOut) throw new Error(`child (names ${names}, agent ${withAgent}) overran\n${stderr}`);
  if (code !== 0) throw new Error(`child exited ${code}: ${stderr}`);
  if (opts.traceGc) require('fs').writeFileSync(path.join(opts.traceGc, `gc-${names}-${withAgent ? `agent-${keep || 100}` : 'without'}.log`), stdout);
  return JSON.parse(stdout.trim().split('\n').pop());
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
      const [without, withAgent, fewer] = await Promise.all([
        runChild({ names, withAgent: false, opts }),
        runChild({ names, withAgent: true, opts }),
        opts.slope ? runChild({ names, withAgent: true, opts, maxNames: opts.slope }) : null,
      ]);
      const grow = (r, k) => r.after[k] - r.before[k];
      const kept = withAgent.kept;
      console.log(`\n${names} hostnames (${withAgent.lookups} lookups with the agent, ${withAgent.errors} failed; ${kept} kept as labels)`);
      // newSpace: V8's young generation (new_space of v8.getHeapSpaceStatistics()), part of heapTotal.
      for (const k of ['rss', 'heapUsed', 'heapTotal', 'newSpace', 'external']) {
        const extra = grow(withAgent, k) - grow(without, k);
        console.log(`  ${k.padEnd(9)} growth without ${mib(grow(without, k)).padStart(9)}, with ${mib(grow(withAgent, k)).padStart(9)}: ${mib(extra)} more, ${kb(extra / kept)} per kept name`);
      }
      if (fewer) {
        console.log(`  slope: the agent keeping ${fewer.kept} (UVSCOPE_DNS_MAX_NAMES=${opts.slope}) under the same lookups`);
        for (const k of ['rss', 'heapUsed', 'heapTotal', 'newSpace', 'external']) {
          const extra = grow(withAgent, k) - grow(fewer, k);
          console.log(`  ${k.padEnd(9)} growth at ${opts.slope} ${mib(grow(fewer, k)).padStart(9)}, at ${kept} ${mib(grow(withAgent, k)).padStart(9)}: ${kb(extra / (kept - fewer.kept))} per kept name`);
        }
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
