'use strict';
// numa: "Fixing DNS tail latency with a 5-line config and a 50-line function". A resolver that
// answers in a few ms, with a periodic slow answer: median 10 ms, p99 113 ms, the tail dragging
// the mean. Here the lab's DNS server answers in 2 ms and every 50th query after 150 ms (a lookup
// sends A and AAAA, so about one lookup in 25); the app looks the name up 30 times a second.
const { withLab, startApp, ms, printFindings, sleep } = require('./common');

const NAME = 'api.numa.test';
const FAST_MS = 2;
const SLOW_MS = 150;
const SLOW_EVERY = 50;

/**
 * Run the numa incident.
 * @param {{ print?: (line: string) => void, seconds?: number }} [options]
 */
async function run({ print = console.log, seconds = 5 } = {}) {
  print(`numa: the resolver answers ${NAME} in ${FAST_MS} ms, but every ${SLOW_EVERY}th query after ${SLOW_MS} ms; the app looks it up 30 times a second, one at a time.`);
  return withLab(print, async (dns) => {
    let app;
    try {
      dns.setName(NAME, { a: '127.0.0.1', delayMs: FAST_MS, slowEvery: SLOW_EVERY, slowDelayMs: SLOW_MS });
      app = await startApp({ app: 'resolver-app.js', env: { LOOKUP_NAME: NAME, LOOKUPS_PER_SECOND: '30' } });
      await sleep(seconds * 1000);
      const snapshot = await app.snapshot();
      const host = snapshot.details.dns.hosts.find((h) => h.name === NAME);
      const slow = dns.queries.filter((q) => q.name === NAME && q.slow).length;
      if (host) print(`  ${host.recentLookups} lookups: p50 ${ms(host.p50)}, p99 ${ms(host.p99)}, standard deviation ${ms(host.stddev)}; the slowest 1 % waited ${ms(host.tail.queueWaitSeconds)} for a DNS slot and ${ms(host.tail.resolveSeconds)} resolving (${slow} slow answers at the server)`);
      printFindings(print, snapshot);
      return { host, slowAnswers: slow, findings: snapshot.findings.map((f) => f.id), snapshot };
    } finally {
      if (app) await app.stop();
    }
  });
}

if (require.main === module) run().catch((err) => { console.error(err); process.exitCode = 1; });

module.exports = { run };
