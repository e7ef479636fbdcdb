'use strict';
// The acceptq incident's driver, run in a network namespace of its own (netns.js): the app
// (apps/accept-app.js, uvscope preloaded), the clients and the ground truth (the namespace's
// /proc/net/netstat before and after, each client's own time to its answer) all live in it.
// SCENARIO (JSON): { backlog?, blockMs, rounds, clients, busyMs?, loadSeconds? }. Prints one JSON line.
const http = require('http');
const path = require('path');
const { spawn } = require('child_process');
const { freePort, cleanEnv, stopChild, firstLine } = require('../../support/processes');
const { readNetstat } = require('./netns');
const { load, sleep, REGISTER } = require('./common');

const INTERVAL_MS = 250;

/** One client on a new connection: seconds to its answer, or null (an error, or 20 s). */
function client(port, urlPath = '/') {
  const start = process.hrtime.bigint();
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false, timeout: 20000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(Number(process.hrtime.bigint() - start) / 1e9));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
  });
}

async function main() {
  const s = JSON.parse(process.env.SCENARIO || '{}');
  const metricsPort = await freePort();
  const env = cleanEnv({ UVSCOPE_PROMETHEUS_PORT: String(metricsPort), UVSCOPE_INTERVAL_MS: String(INTERVAL_MS), UVSCOPE_BLOCKERS: 'on', BLOCK_MS: String(s.blockMs || 0), BUSY_MS: String(s.busyMs || 0), ...(s.backlog ? { BACKLOG: String(s.backlog) } : {}) });
  const app = spawn(process.execPath, ['--require', REGISTER, path.join(__dirname, 'apps', 'accept-app.js')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const { port } = JSON.parse(await firstLine(app, 'accept-app.js'));
    await sleep(3 * INTERVAL_MS); // the agent's first samples: the counters' baseline
    const before = readNetstat();
    const times = [];
    for (let r = 0; r < (s.rounds || 0); r++) {
      const blocked = s.blockMs ? client(port, '/block') : null;
      if (blocked) await sleep(100); // the app is in the blocking handler
      times.push(...await Promise.all(Array.from({ length: s.clients }, () => client(port))));
      if (blocked) await blocked;
      await sleep(300);
    }
    const requests = s.loadSeconds ? await load(port, { seconds: s.loadSeconds, concurrency: 8 }) : 0;
    await sleep(3 * INTERVAL_MS); // a sample after the last client
    const after = readNetstat();
    const snapshot = await (await fetch(`http://127.0.0.1:${metricsPort}/snapshot.json`)).json();
    const answered = times.filter((t) => t !== null);
    console.log(JSON.stringify({
      port: String(port),
      kernel: { overflows: after.ListenOverflows - before.ListenOverflows, drops: after.ListenDrops - before.ListenDrops },
      clients: { total: times.length, answered: answered.length, slow: answered.filter((t) => t >= 1).length, fast: answered.filter((t) => t < 0.9).length, maxSeconds: Math.max(0, ...answered) },
      requests,
      listen: snapshot.details.listen,
      findings: snapshot.findings,
    }));
  } finally {
    await stopChild(app);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
