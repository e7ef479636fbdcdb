'use strict';
// throttled: a container with a CPU limit. A reporting service (GET /report renders for 10 ms on
// the event loop, then gzips 1 MiB at level 9 on the threadpool) runs in a cgroup with a CPU
// quota of 0.5 CPU on a host with more: 4 clients want more CPU than the quota gives, and the
// kernel stops every thread of the app for the rest of each 100 ms period once the quota is spent.
// Nothing in the app is blocked or saturated: the CPU limit is the bottleneck. Needs root and a
// writable cpu cgroup controller (support/cgroup.js); elsewhere it says so and skips.
const { startApp, load, printFindings, value } = require('./common');
const { cgroupSupport, createCpuCgroup } = require('../../support/cgroup');

const QUOTA_CPUS = 0.5;
const CLIENTS = 4;

/**
 * Run the throttled incident: the report service under a 0.5 CPU quota.
 * @param {{ print?: (line: string) => void, seconds?: number }} [options]
 */
async function run({ print = console.log, seconds = 5 } = {}) {
  print(`throttled: GET /report renders for 10 ms on the event loop and gzips 1 MiB at level 9 on the threadpool; the app runs in a cgroup with a CPU quota of ${QUOTA_CPUS} CPU; ${CLIENTS} clients on keep-alive.`);
  const support = cgroupSupport();
  if (!support.ok) {
    print(`  skipped: ${support.reason} (this incident makes a cgroup with a CPU quota, which needs root and a writable cpu controller)`);
    return { skipped: support.reason };
  }
  const cgroup = createCpuCgroup({ cpus: QUOTA_CPUS, name: 'uvscope-lab' });
  try {
    const app = await startApp({ app: 'report-app.js', namespace: false, spawnWith: cgroup.spawn, env: { BUSY_MS: '10' } });
    try {
      const requests = await load(app.ready.port, { seconds, concurrency: CLIENTS });
      const snapshot = await app.snapshot();
      const stat = cgroup.stat();
      const budget = value(snapshot, 'process.cpu.budget');
      print(`  ${Math.round(requests / seconds)} req/s, ${Math.round((CLIENTS * seconds * 1000) / Math.max(1, requests))} ms per request; the cgroup's cpu.stat: ${stat.throttledPeriods} of ${stat.periods} periods throttled, ${stat.throttledSeconds.toFixed(2)} s throttled; uvscope's process.cpu.budget: ${budget} CPU`);
      printFindings(print, snapshot);
      return { findings: snapshot.findings.map((f) => f.id), snapshot, stat, quotaCpus: cgroup.quotaCpus, requests };
    } finally {
      await app.stop();
    }
  } finally {
    await cgroup.remove();
  }
}

if (require.main === module) run().catch((err) => { console.error(err); process.exitCode = 1; });

module.exports = { run };
