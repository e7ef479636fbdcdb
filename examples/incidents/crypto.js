'use strict';
// crypto: a login route hashes passwords with crypto.pbkdf2 on the libuv threadpool. With 8
// logins in flight on a pool of 4, every thread computes a hash, and the app's other pool users
// (the profile route's file read and its upstream lookup) wait behind them. Node does not list
// async crypto in process.getActiveResourcesInfo(), so the backlog is invisible where people
// look; DNS is what looks slow. The fix: hash in worker_threads (or fewer iterations).
// The app re-resolves its upstream's address every 250 ms; those lookups wait behind the hashes.
// Needs no DNS server: the upstream is localhost, which getaddrinfo answers from /etc/hosts, on a
// pool thread all the same.
const http = require('http');
const { startApp, startUpstream, meanOf, ms, printFindings } = require('./common');

// 16 logins at once on 4 threads: a job waits at least 3 hashes for a thread (over 250 ms, uvscope's
// tracer arming threshold, even on a fast idle machine with 4+ cores).
const ITERATIONS = 150000;
const LOGIN_CLIENTS = 16;
const PROFILE_CLIENTS = 2;

/**
 * Run the crypto incident: hashing on the pool, then in worker_threads.
 * @param {{ print?: (line: string) => void, seconds?: number, env?: object }} [options]
 */
async function run({ print = console.log, seconds = 3, env = {} } = {}) {
  print(`crypto: POST /login hashes the password with crypto.pbkdf2 (${ITERATIONS} rounds of sha512), ${LOGIN_CLIENTS} clients logging in on keep-alive; ${PROFILE_CLIENTS} clients load GET /profile (a file read and an upstream call on keep-alive) while the app re-resolves its upstream (localhost) every 250 ms; pool of 4.`);
  const upstream = await startUpstream();
  const result = {};
  try {
    for (const hashOn of ['pool', 'worker']) {
      const app = await startApp({ app: 'login-app.js', namespace: false, env: { HASH_ON: hashOn, HASH_ITERATIONS: String(ITERATIONS), UPSTREAM_PORT: String(upstream.port), ...env } });
      try {
        const port = app.ready.port;
        const [logins, profile] = await Promise.all([
          drive(port, { method: 'POST', path: '/login', body: 'hunter2', clients: LOGIN_CLIENTS, seconds }),
          drive(port, { method: 'GET', path: '/profile', clients: PROFILE_CLIENTS, seconds }),
        ]);
        const snapshot = await app.snapshot();
        const r = {
          lookupMeanSeconds: meanOf(snapshot, 'dns.lookup.duration'),
          loginsPerSecond: logins.count / seconds,
          profileMeanSeconds: profile.mean,
          profileMaxSeconds: profile.max,
          workQueueWaitMean: meanOf(snapshot, 'nodejs.uv.threadpool.queue_wait', { 'nodejs.uv.threadpool.queue': 'work' }),
          findings: snapshot.findings.map((f) => f.id),
          snapshot,
        };
        result[hashOn] = r;
        const tracer = snapshot.details.threadpool && snapshot.details.threadpool.tracer;
        r.tracerArmings = tracer ? tracer.armings : 0;
        print(`  hashing ${hashOn === 'pool' ? 'on the threadpool (crypto.pbkdf2)' : 'in worker_threads (pbkdf2Sync)'}: ${r.loginsPerSecond.toFixed(1)} logins/s; GET /profile mean ${ms(r.profileMeanSeconds, 0)}, max ${ms(r.profileMaxSeconds, 0)}; dns.lookup(localhost) mean ${ms(r.lookupMeanSeconds, 0)}; a job waited ${ms(r.workQueueWaitMean, 0)} on average for a pool thread; uvscope's tracer (auto) armed ${r.tracerArmings} time(s)`);
        printFindings(print, snapshot);
      } finally {
        await app.stop();
      }
    }
  } finally {
    await upstream.close();
  }
  return result;
}

/** `clients` keep-alive clients sending requests for `seconds`; count and latency. */
async function drive(port, { method, path, body, clients, seconds }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const stopAt = Date.now() + seconds * 1000;
  let count = 0;
  let total = 0;
  let max = 0;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (Date.now() < stopAt) {
      const start = process.hrtime.bigint();
      await new Promise((resolve) => {
        const req = http.request({ host: '127.0.0.1', port, method, path, agent, timeout: 20000 }, (res) => {
          res.resume();
          res.on('end', resolve);
        });
        req.on('error', resolve);
        req.end(body);
      });
      const s = Number(process.hrtime.bigint() - start) / 1e9;
      count++;
      total += s;
      max = Math.max(max, s);
    }
  }));
  agent.destroy();
  return { count, mean: count ? total / count : null, max };
}

if (require.main === module) run().catch((err) => { console.error(err); process.exitCode = 1; });

module.exports = { run };
