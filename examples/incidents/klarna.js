'use strict';
// klarna: a StatsD client configured with a hostname resolved it for every datagram; the
// threadpool could not keep up and tens of thousands of GetAddrInfoReqWrap piled up.
const dgram = require('dgram');
const { withLab, startApp, value, printFindings, sleep } = require('./common');

const STATSD_HOST = 'statsd.klarna.test';
const DNS_DELAY_MS = 50;

/**
 * Run the klarna incident with the real hot-shots client.
 * @param {{ print?: (line: string) => void, seconds?: number, rate?: number }} [options]
 */
async function run({ print = console.log, seconds = 3, rate = 2000 } = {}) {
  print(`klarna: hot-shots sends ${rate} metrics/s to ${STATSD_HOST}, resolving it per datagram; DNS answers in ${DNS_DELAY_MS} ms; pool of 4.`);
  return withLab(print, async (dns) => {
    const statsd = dgram.createSocket('udp4');
    await new Promise((r) => statsd.bind(0, '127.0.0.1', r));
    let datagrams = 0;
    statsd.on('message', () => datagrams++);
    let app;
    try {
      dns.setName(STATSD_HOST, { a: '127.0.0.1', delayMs: DNS_DELAY_MS });
      app = await startApp({ app: 'statsd-app.js', env: { STATSD_HOST, STATSD_PORT: String(statsd.address().port), METRICS_PER_SECOND: String(rate) } });
      await sleep(seconds * 1000);
      const snapshot = await app.snapshot();
      const backlog = value(snapshot, 'nodejs.uv.requests.active', { 'nodejs.uv.request.type': 'GetAddrInfoReqWrap' });
      const noCache = snapshot.findings.find((f) => f.id === 'dns-no-cache');
      const caller = noCache && noCache.evidence.hostnames[0].callers[0];
      print(`  after ${seconds} s: ${backlog} GetAddrInfoReqWrap pending, ${datagrams} datagrams delivered, ${dns.count(STATSD_HOST, 'A')} A queries at the DNS server`);
      printFindings(print, snapshot);
      return { backlog, datagrams, findings: snapshot.findings.map((f) => f.id), caller: caller && caller.caller, snapshot };
    } finally {
      if (app) await app.stop();
      statsd.close();
    }
  });
}

if (require.main === module) run().catch((err) => { console.error(err); process.exitCode = 1; });

module.exports = { run };
