'use strict';
// starve: an export route compresses a report with zlib.deflate at level 9, a short CPU-bound job
// (about 5 ms of CPU) on the libuv threadpool per request. 16 clients export at once; the app has
// one CPU (taskset -c 0, as a container limited to one CPU would). No job holds a thread long,
// so the pool is never "held": its 4 threads take turns on the one CPU, each waiting for it most
// of the time, and everything else on the pool waits with them: a lookup of localhost, answered
// from /etc/hosts in well under a millisecond, takes as long as a few compressions. The event
// loop's thread waits for the CPU too, so GET /page is late. The fix: compress in worker_threads
// sized to the CPU budget (here 1), so the pool's threads and the loop find the CPU free when
// they have work. Needs no DNS server.
const http = require('http');
const { execFileSync } = require('child_process');
const { startApp, meanOf, ms, printFindings } = require('./common');
const { processCpuNs } = require('../../support/processes');

const EXPORT_CLIENTS = 16;
const CPUS = '0';

/** Whether taskset can pin a child here, and if not, why. */
function pinSupport() {
  if (process.platform !== 'linux') return { ok: false, reason: `taskset is Linux-only (platform ${process.platform})` };
  try {
    execFileSync('taskset', ['-c', CPUS, 'true'], { stdio: 'ignore' });
    return { ok: true };
  } catch (err) {
    return { ok: false, reason: `taskset -c ${CPUS} does not run here (${err.code || err.message})` };
  }
}

/**
 * Run the starve incident: compression on the pool, then in worker_threads; one CPU.
 * @param {{ print?: (line: string) => void, seconds?: number, env?: object }} [options]
 */
async function run({ print = console.log, seconds = 4, env = {} } = {}) {
  print(`starve: GET /export compresses a 32 KB report with zlib.deflate at level 9 (~5 ms of CPU each), ${EXPORT_CLIENTS} clients exporting on keep-alive; one client loads GET /page (answered at once) while the app looks up localhost every 100 ms; pool of 4, one CPU (taskset -c ${CPUS}).`);
  const support = pinSupport();
  if (!support.ok) {
    print(`  skipped: ${support.reason}`);
    return { skipped: support.reason };
  }
  const result = {};
  for (const compressOn of ['pool', 'worker']) {
    const app = await startApp({ app: 'compress-app.js', namespace: false, cpus: CPUS, env: { COMPRESS_ON: compressOn, ...env } });
    try {
      const port = app.ready.port;
      await get(port, '/lookups'); // the lookups before the load are not the incident's
      const cpuBefore = processCpuNs(app.pid);
      const [exportsDone, page] = await Promise.all([
        drive(port, '/export', EXPORT_CLIENTS, seconds),
        drive(port, '/page', 1, seconds),
      ]);
      const appCpus = (processCpuNs(app.pid) - cpuBefore) / 1e9 / seconds;
      const snapshot = await app.snapshot();
      const lookups = JSON.parse(await get(port, '/lookups'));
      const r = {
        exportsPerSecond: exportsDone.count / seconds,
        // the CPU the app got (CPU-s a second, every thread): under 1 when other work shares its CPU
        appCpus,
        pageMeanSeconds: page.mean,
        // the app's own times of its lookups (call to callback), the ground truth
        appLookupMeanSeconds: lookups.length ? lookups.reduce((a, b) => a + b, 0) / lookups.length : null,
        appLookups: lookups.length,
        lookupMeanSeconds: meanOf(snapshot, 'dns.lookup.duration'),
        findings: snapshot.findings.map((f) => f.id),
        snapshot,
      };
      result[compressOn] = r;
      print(`  compressing ${compressOn === 'pool' ? 'on the threadpool (zlib.deflate)' : 'in worker_threads (deflateSync, 1 worker)'}: ${r.exportsPerSecond.toFixed(0)} exports/s; GET /page mean ${ms(r.pageMeanSeconds, 1)}; dns.lookup(localhost) mean ${ms(r.appLookupMeanSeconds, 1)} as the app timed it; the app used ${r.appCpus.toFixed(2)} of its one CPU`);
      printFindings(print, snapshot);
    } finally {
      await app.stop();
    }
  }
  return result;
}

function get(port, path) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
}

/** `clients` keep-alive clients sending GET path for `seconds`; count and mean latency. */
async function drive(port, path, clients, seconds) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const stopAt = Date.now() + seconds * 1000;
  let count = 0;
  let total = 0;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (Date.now() < stopAt) {
      const start = process.hrtime.bigint();
      await new Promise((resolve) => {
        http.get({ host: '127.0.0.1', port, path, agent, timeout: 20000 }, (res) => {
          res.resume();
          res.on('end', resolve);
        }).on('error', resolve);
      });
      count++;
      total += Number(process.hrtime.bigint() - start) / 1e9;
      // GET /page: one request every 20 ms, as a browser would, not a tight loop
      if (clients === 1) await new Promise((r) => setTimeout(r, 20));
    }
  }));
  agent.destroy();
  return { count, mean: count ? total / count : null };
}

if (require.main === module) run().catch((err) => { console.error(err); process.exitCode = 1; });

module.exports = { run, pinSupport };
