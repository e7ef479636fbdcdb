'use strict';

// Main-thread CPU per dns.lookup, without and with the agent, alternated in one run.
//
//   node bench/lookup-cost.js [--rounds 5] [--ms 2000] [--concurrency 8] [--rows ip,hosts,dns] [--json]
//                             [--node-flags '--no-opt --no-maglev']
//
// --node-flags: Node flags for every child, without and with the agent alike (default none): with
// '--no-opt --no-maglev' the lookups run in V8's interpreter and baseline code, as in
// bench/instructions.js's path.
// Rows:
//   ip     an IP literal (127.0.0.1): no getaddrinfo; the wrapper only checks and passes it on
//   hosts  localhost, answered from /etc/hosts by getaddrinfo on the threadpool
//   dns    bench.test, answered by a DNS server this bench runs on 127.0.17.1:53, seen by the
//          child through a private mount namespace (support/namespace.js); skipped with a
//          message where that is not possible (not root, no unshare)
//
// Each measurement is a fresh child (bench/fixtures/lookup-loop.js) that keeps --concurrency
// lookups in flight for a 1.5 s warm-up (past the agent's start and first sample, one-time costs)
// and then --ms, and reads its main thread's CPU time from
// /proc/self/task/<pid>/schedstat (ns; getaddrinfo's own work on the pool threads is not counted).
// With the agent: `--require register.js` with its defaults (1 s sampling, callers sampled as in
// production: the first 8 lookups of each name, then about one in 16, at most 20 a second;
// Prometheus on a free port), so its sampling timer is part of the figure. Per row and round both variants run, order
// flipped every round. Printed per row: CPU µs per lookup without and with (medians), the median
// of the per-round differences (the added cost) and their range over rounds.
// A first row with no lookups measures the agent's background work (its sampling, and the event-
// loop monitor's 10 ms timer on Node without samplePerIteration) in main-thread CPU per second;
// each row is also printed with that taken out, the cost of the lookups themselves.
// Bounded: 4 rows x rounds x 2 x (ms + ~1.7 s): ~2.5 min at the defaults; watchdog at 3x that.

const path = require('path');
const { spawn } = require('child_process');
const { median, machine } = require('./fixtures/stats');
const { scrubEnv, childOutput, watchdog } = require('../support/processes');

const REPO = path.resolve(__dirname, '..');
const REGISTER = path.join(REPO, 'register.js');
const LOOP = path.join(__dirname, 'fixtures', 'lookup-loop.js');
const DNS_ADDRESS = '127.0.17.1';
const DNS_NAME = 'bench.test';

function parseArgs(argv) {
  const opts = { rounds: 5, ms: 2000, concurrency: 8, json: false, rows: ['ip', 'hosts', 'dns'], nodeFlags: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--json') { opts.json = true; continue; }
    if (argv[i] === '--help' || argv[i] === '-h') {
      console.log('usage: node bench/lookup-cost.js [--rounds 5] [--ms 2000] [--concurrency 8] [--rows ip,hosts,dns] [--json] [--node-flags \'--no-opt --no-maglev\']');
      process.exit(0);
    }
    const m = /^--(rounds|ms|concurrency|rows|node-flags)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unknown argument ${argv[i]} (try --help)`);
    const raw = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'node-flags') {
      opts.nodeFlags = String(raw).split(/\s+/).filter(Boolean);
      continue;
    }
    if (m[1] === 'rows') {
      opts.rows = raw.split(',');
      continue;
    }
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${m[1]} needs a positive integer, got ${raw}`);
    opts[m[1]] = n;
  }
  return opts;
}

/** Collect one child's JSON line; the child ends on its own, or is killed by pid on timeout. */
async function collect(child, timeoutMs) {
  const { code, stdout, stderr } = await childOutput(child, timeoutMs);
  const line = stdout.trim().split('\n').pop();
  if (code !== 0 || !line) throw new Error(`lookup-loop exited with ${code}: ${stderr}`);
  return JSON.parse(line);
}

function runChild(row, withAgent, opts, ns) {
  const args = [...opts.nodeFlags, ...(withAgent ? ['--require', REGISTER, LOOP] : [LOOP])];
  const env = scrubEnv({
    LOOKUP_NAME: row.name,
    LOOKUP_CONCURRENCY: String(opts.concurrency),
    LOOKUP_MS: String(opts.ms),
    ...(withAgent ? { UVSCOPE_PROMETHEUS_PORT: '0' } : {}),
  });
  const timeoutMs = opts.ms + 20000;
  if (row.namespace) {
    const child = ns.spawnInNamespace({ resolvConf: ns.resolvConf({ nameserver: DNS_ADDRESS }), args, env, stdio: ['ignore', 'pipe', 'pipe'] });
    return collect(child, timeoutMs);
  }
  return collect(spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] }), timeoutMs);
}

/**
 * @param {object} opts parsed options
 * @returns {Promise<object[]>} per row: medians and the range of the added cost, or a skip reason
 */
async function measure(opts) {
  const rows = [
    { id: 'ip', label: 'IP literal (127.0.0.1)', name: '127.0.0.1' },
    { id: 'hosts', label: 'localhost (/etc/hosts)', name: 'localhost' },
    { id: 'dns', label: `${DNS_NAME} (DNS server)`, name: DNS_NAME, namespace: true },
  ].filter((r) => opts.rows.includes(r.id));
  let ns = null;
  let server = null;
  const results = [];
  // The agent's own background work (its 1 s sample, the 10 ms timer of the event-loop monitor on
  // Node versions without samplePerIteration) costs main-thread CPU per second, not per lookup:
  // measured with no lookups at all, so it can be taken out of the per-lookup figures.
  const background = { without: [], with: [] };
  for (let round = 0; round < opts.rounds; round++) {
    for (const withAgent of round % 2 === 0 ? [false, true] : [true, false]) {
      const r = await runChild({ name: 'localhost' }, withAgent, { ...opts, concurrency: 0 }, ns);
      background[withAgent ? 'with' : 'without'].push(r.cpuNs / (r.wallMs / 1000) / 1000); // µs per second
    }
  }
  const backgroundUsPerS = median(background.with) - median(background.without);
  results.push({ id: 'background', label: 'no lookups (background)', backgroundUsPerS, range: [Math.min(...background.with), Math.max(...background.with)] });
  try {
    for (const row of rows) {
      if (row.namespace) {
        ns = require('../support/namespace');
        const support = ns.namespaceSupport();
        if (!support.ok) {
          results.push({ id: row.id, label: row.label, skipped: `no private mount namespace: ${support.reason}` });
          continue;
        }
        const { createDnsServer } = require('../support/dns-server');
        server = await createDnsServer({ address: DNS_ADDRESS, port: 53 });
        server.setName(DNS_NAME, { a: '127.0.0.1' });
      }
      const runs = { without: [], with: [] };
      for (let round = 0; round < opts.rounds; round++) {
        const order = round % 2 === 0 ? [false, true] : [true, false];
        for (const withAgent of order) {
          const r = await runChild(row, withAgent, opts, ns);
          if (r.errors > 0) throw new Error(`${row.label}: ${r.errors} lookups failed`);
          runs[withAgent ? 'with' : 'without'].push(r);
        }
      }
      const perLookup = (r) => r.cpuNs / r.lookups / 1000;
      const added = runs.with.map((w, i) => perLookup(w) - perLookup(runs.without[i]));
      // The same without the agent's background CPU over the child's measured window.
      const perLookupNet = (r) => (r.cpuNs / 1000 - backgroundUsPerS * (r.wallMs / 1000)) / r.lookups;
      const addedNet = runs.with.map((w, i) => perLookupNet(w) - perLookup(runs.without[i]));
      results.push({
        id: row.id,
        label: row.label,
        lookupsPerSecond: Math.round(median(runs.without.map((r) => r.lookups / (r.wallMs / 1000)))),
        withoutUs: median(runs.without.map(perLookup)),
        withUs: median(runs.with.map(perLookup)),
        addedUs: median(added),
        minAddedUs: Math.min(...added),
        maxAddedUs: Math.max(...added),
        addedNetUs: median(addedNet),
        minAddedNetUs: Math.min(...addedNet),
        maxAddedNetUs: Math.max(...addedNet),
      });
      if (server) {
        await server.close();
        server = null;
      }
    }
  } finally {
    if (server) await server.close();
  }
  return results;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const budgetMs = 3 * (opts.rows.length + 1) * opts.rounds * 2 * (opts.ms + 1700) + 30000;
  watchdog('bench/lookup-cost.js', budgetMs);
  const before = machine();
  const results = await measure(opts);
  const after = machine().load;
  if (opts.json) {
    console.log(JSON.stringify({ ...before, loadAfter: after, opts, results }));
    return;
  }
  console.log(`node ${before.node}, ${before.cpus} CPUs, load ${before.load} before; ${opts.rounds} alternated rounds of ${opts.ms} ms, ${opts.concurrency} lookups in flight${opts.nodeFlags.length ? `; node flags: ${opts.nodeFlags.join(' ')}` : ''}`);
  console.log('main-thread CPU per dns.lookup, µs (medians over rounds)');
  const bg = results.find((r) => r.id === 'background');
  console.log(`the agent's background work (no lookups): +${(bg.backgroundUsPerS / 1000).toFixed(2)} ms of main-thread CPU per second`);
  console.log(`${'lookup'.padEnd(26)} ${'lookups/s'.padStart(10)} ${'without'.padStart(8)} ${'with'.padStart(8)} ${'added'.padStart(8)}   range of added   added w/o background (range)`);
  for (const r of results) {
    if (r.id === 'background') continue;
    if (r.skipped) {
      console.log(`${r.label.padEnd(26)} skipped: ${r.skipped}`);
      continue;
    }
    const f = (v) => v.toFixed(2);
    console.log(`${r.label.padEnd(26)} ${String(r.lookupsPerSecond).padStart(10)} ${f(r.withoutUs).padStart(8)} ${f(r.withUs).padStart(8)} ${f(r.addedUs).padStart(8)}   ${`${f(r.minAddedUs)}..${f(r.maxAddedUs)}`.padEnd(14)}   ${f(r.addedNetUs)} (${f(r.minAddedNetUs)}..${f(r.maxAddedNetUs)})`);
  }
  console.log(`load after: ${after}`);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

module.exports = { measure };
