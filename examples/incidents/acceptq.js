'use strict';
// acceptq: "connections the app never sees". An HTTP service on Node's default backlog (511)
// whose event loop is blocked for 1.5 s (GET /block: a synchronous job) while 1,500 clients
// connect, twice. The kernel completes 512 handshakes into the accept queue and drops the other
// clients' SYNs: they retransmit after 1 s, then 3 s, and nothing in the app sees them. Runs in a
// network namespace of its own (unshare -n: root), whose /proc/net/netstat counts only the lab's
// traffic; elsewhere it says so and skips.
const path = require('path');
const { netnsSupport, runInNetns } = require('./netns');
const { printFindings } = require('./common');

/**
 * Run the acceptq incident.
 * @param {{ print?: (line: string) => void, clients?: number, rounds?: number, blockMs?: number, backlog?: number }} [options]
 */
async function run({ print = console.log, clients = 1500, rounds = 2, blockMs = 1500, backlog } = {}) {
  print(`acceptq: an HTTP service on ${backlog ? `a backlog of ${backlog}` : 'Node\'s default backlog (511)'} whose loop is blocked for ${blockMs} ms while ${clients} clients connect, ${rounds} times.`);
  const support = netnsSupport();
  if (!support.ok) {
    print(`  skipped: ${support.reason} (the incident runs in a network namespace of its own, so the kernel's counters are its own)`);
    return { skipped: support.reason };
  }
  const r = await runInNetns(path.join(__dirname, 'acceptq-inside.js'), { SCENARIO: JSON.stringify({ clients, rounds, blockMs, backlog }) });
  const l = r.listen && r.listen.listeners.find((x) => x.port === r.port);
  print(`  the kernel (the namespace's ListenOverflows): +${r.kernel.overflows}; ${r.clients.slow} of ${r.clients.total} clients answered after 1 s or more (the slowest after ${r.clients.maxSeconds.toFixed(1)} s); uvscope saw the queue at ${l ? `${l.maxSeen} of its limit of ${l.limit}` : '-'}`);
  printFindings(print, r);
  return { ...r, findings: r.findings.map((f) => f.id), snapshot: { findings: r.findings } };
}

if (require.main === module) run().catch((err) => { console.error(err); process.exitCode = 1; });

module.exports = { run };
