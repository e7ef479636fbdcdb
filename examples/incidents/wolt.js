'use strict';
// wolt: "Improving wolt.com latency by demystifying Node.js DNS resolution". A service calls many
// upstream hostnames; DNS answers in tens of ms; with the default pool of 4 only 2 lookups run at
// once and the rest queue. UV_THREADPOOL_SIZE=64 fixed it.
const { withLab, startApp, load, startUpstream, meanOf, ms, printFindings } = require('./common');

const HOSTS = Array.from({ length: 20 }, (_, i) => `svc-${i}.wolt.test`);
const DNS_DELAY_MS = 30;

/**
 * Run the wolt incident at pool 4 and at pool 64.
 * @param {{ print?: (line: string) => void, seconds?: number }} [options]
 */
async function run({ print = console.log, seconds = 3 } = {}) {
  print(`wolt: a service calls ${HOSTS.length} upstream hostnames, one lookup per request; DNS answers in ${DNS_DELAY_MS} ms; 32 concurrent clients.`);
  return withLab(print, async (dns) => {
    const upstream = await startUpstream();
    const result = {};
    try {
      dns.setName('*.wolt.test', { a: '127.0.0.1', delayMs: DNS_DELAY_MS });
      for (const pool of [4, 64]) {
        const app = await startApp({ app: 'service.js', env: { UV_THREADPOOL_SIZE: String(pool), UPSTREAM_HOSTS: HOSTS.join(','), UPSTREAM_PORT: String(upstream.port) } });
        try {
          const requests = await load(app.ready.port, { seconds, concurrency: 32 });
          const snapshot = await app.snapshot();
          result[pool] = {
            requestsPerSecond: requests / seconds,
            dnsQueueWaitMean: meanOf(snapshot, 'nodejs.uv.threadpool.queue_wait', { 'nodejs.uv.threadpool.queue': 'dns' }),
            lookupMean: meanOf(snapshot, 'dns.lookup.duration'),
            findings: snapshot.findings.map((f) => f.id),
            snapshot,
          };
          const r = result[pool];
          print(`  UV_THREADPOOL_SIZE=${pool}: ${Math.round(r.requestsPerSecond)} req/s, lookup mean ${ms(r.lookupMean)} (DNS answers in ${DNS_DELAY_MS} ms), DNS queue wait mean ${ms(r.dnsQueueWaitMean)}`);
          printFindings(print, snapshot);
        } finally {
          await app.stop();
        }
      }
    } finally {
      await upstream.close();
    }
    return result;
  });
}

if (require.main === module) run().catch((err) => { console.error(err); process.exitCode = 1; });

module.exports = { run };
