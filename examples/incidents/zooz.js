'use strict';
// zooz: "Node.js performance": event-loop lag under CPU load, and an HTTP client without
// keep-alive. Needs no DNS server: the upstream is localhost.
const { startApp, load, startUpstream, value, printFindings } = require('./common');

/**
 * Run the zooz incident: CPU-bound handlers (25 ms each) and a client without keep-alive.
 * @param {{ print?: (line: string) => void, seconds?: number, spawnWith?: Function }} [options]
 *   spawnWith: how the app is spawned (a cgroup's spawn; child_process.spawn by default)
 */
async function run({ print = console.log, seconds = 2, spawnWith } = {}) {
  print('zooz: each request burns 25 ms of CPU on the event loop and calls localhost without keep-alive; 8 concurrent clients.');
  const upstream = await startUpstream();
  // The capture of what blocks the loop, at 20 ms: each handler is one 25 ms callback (8 of them
  // in one turn of the loop make its 150 ms delay).
  const app = await startApp({ app: 'service.js', namespace: false, spawnWith, env: { BUSY_MS: '25', UPSTREAM_HOSTS: 'localhost', UPSTREAM_PORT: String(upstream.port), UVSCOPE_BLOCKERS: 'on', UVSCOPE_BLOCKERS_THRESHOLD_MS: '20' } });
  try {
    const requests = await load(app.ready.port, { seconds, concurrency: 8 });
    const snapshot = await app.snapshot();
    const reqs = snapshot.points.filter((p) => p.name === 'nodejs.http.client.requests');
    const fresh = reqs.filter((p) => p.attributes['nodejs.http.connection.reused'] === 'false').reduce((a, p) => a + p.value, 0);
    const total = reqs.reduce((a, p) => a + p.value, 0);
    print(`  ${Math.round(requests / seconds)} req/s; event-loop delay max in the last interval ${Math.round((value(snapshot, 'nodejs.eventloop.delay.max') || 0) * 1000)} ms; ${fresh} of ${total} upstream requests opened a new connection`);
    printFindings(print, snapshot);
    return { findings: snapshot.findings.map((f) => f.id), snapshot };
  } finally {
    await app.stop();
    await upstream.close();
  }
}

if (require.main === module) run().catch((err) => { console.error(err); process.exitCode = 1; });

module.exports = { run };
