'use strict';
// ko: lookups that take exactly 5 s. A lost UDP query is resent after resolv.conf's timeout
// (glibc's default 5 s), so a flaky path to the resolver shows as lookups of k x 5 s.
const { withLab, startApp, value, printFindings, sleep } = require('./common');

/**
 * Run the ko incident: the DNS server drops the first query for every name.
 * @param {{ print?: (line: string) => void }} [options]
 */
async function run({ print = console.log } = {}) {
  print('ko: an app looks up its database now and then; the path to the DNS server loses the first query of each name; resolv.conf has the defaults (timeout 5 s, attempts 2).');
  return withLab(print, async (dns) => {
    let app;
    try {
      dns.setName('db.ko.test', { a: '127.0.0.1', dropFirst: 1 });
      app = await startApp({ app: 'lookup-app.js', env: { LOOKUP_NAME: 'db.ko.test' }, conf: { timeout: 5, attempts: 2 } });
      await sleep(6000);
      const snapshot = await app.snapshot();
      const h = value(snapshot, 'dns.lookup.duration', { 'dns.question.name': 'db.ko.test', 'error.type': '' });
      const slow = h ? h.counts[h.bounds.indexOf(6)] : 0;
      print(`  ${h ? h.count : 0} lookups finished; ${slow} of them in the (4 s, 6 s] bucket (the first query lost, resent after 5 s), the rest in milliseconds`);
      printFindings(print, snapshot);
      return { slowLookups: slow, lookups: h ? h.count : 0, findings: snapshot.findings.map((f) => f.id), snapshot };
    } finally {
      if (app) await app.stop();
    }
  });
}

if (require.main === module) run().catch((err) => { console.error(err); process.exitCode = 1; });

module.exports = { run };
