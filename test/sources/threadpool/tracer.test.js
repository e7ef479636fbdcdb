'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { createTracer } = require('../../../lib/sources/threadpool/tracer');
const { kindOf } = require('../../../lib/sources/threadpool/jobs');
const { routeOf } = require('../../../lib/sources/threadpool/routes');
const { supportsTrackPromises } = require('../../../lib/sources/threadpool/modes');
const { FIXTURES, runNode, lastJson } = require('../../helpers/child');

const APP = path.join(FIXTURES, 'tracer-app.js');
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

/** The fixture's own line holding a marker comment, as the tracer reports a call site. */
function lineOf(marker) {
  const lines = fs.readFileSync(APP, 'utf8').split('\n');
  const i = lines.findIndex((l) => l.includes(marker));
  assert.notEqual(i, -1, marker);
  return `test/fixtures/tracer-app.js:${i + 1}`;
}

async function scenario(name, env = {}, flags = []) {
  const r = await runNode([...flags, APP], { env: { FIXTURE_SCENARIO: name, UVSCOPE_TRACER: 'on', UV_THREADPOOL_SIZE: '4', ...env }, timeoutMs: 60000 });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /UVSCOPE_INTERNAL_ERROR/, r.stderr);
  return lastJson(r.stdout);
}

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

describe('tracer: provider types and modes', function () {
  it('kinds from Node\'s own provider types; unknown native types are `other`; Node\'s non-pool types are none', () => {
    assert.equal(kindOf('GETADDRINFOREQWRAP'), 'dns');
    assert.equal(kindOf('FSREQPROMISE'), 'fs');
    assert.equal(kindOf('PBKDF2REQUEST'), 'crypto');
    assert.equal(kindOf('ARGON2REQUEST'), 'crypto');
    assert.equal(kindOf('ZLIB'), 'zlib');
    assert.equal(kindOf('MY_ADDON_WORK'), 'other');
    assert.equal(kindOf('TCPWRAP'), null);
    assert.equal(kindOf('PROMISE'), null);
    assert.equal(kindOf('Timeout'), null);
  });

  it('routes: method and path without query, ids folded, bounded', () => {
    assert.deepEqual(routeOf('POST', '/login?user=a'), { method: 'POST', route: '/login' });
    assert.deepEqual(routeOf('GET', '/users/123/avatar#x'), { method: 'GET', route: '/users/:id/avatar' });
    assert.deepEqual(routeOf('GET', '/o/6f1c2d3e-aaaa-bbbb-cccc-0123456789ab'), { method: 'GET', route: '/o/:id' });
  });

  it('auto mode arms on a long probe wait or a full pool, disarms after its window, then cools down', () => {
    let t = 1000;
    const tracer = createTracer({ mode: 'auto', thresholdMs: 100, windowMs: 10000, cooldownMs: 90000, now: () => t });
    try {
      tracer.consider({ waitSeconds: 0.05, poolFull: false });
      assert.equal(tracer.armed, false);
      tracer.consider({ waitSeconds: 0.2, poolFull: false });
      assert.equal(tracer.armed, true);
      t += 9999;
      tracer.consider({ waitSeconds: 1, poolFull: true });
      assert.equal(tracer.armed, true);
      t += 1;
      tracer.consider({ waitSeconds: 1, poolFull: true });
      assert.equal(tracer.armed, false);
      t += 89999;
      tracer.consider({ waitSeconds: 1, poolFull: true });
      assert.equal(tracer.armed, false, 'still cooling down');
      t += 1;
      tracer.consider({ waitSeconds: 0, poolFull: true });
      assert.equal(tracer.armed, true);
      const { state } = tracer.collect();
      assert.equal(state.armings, 2);
      assert.equal(state.armedSeconds, 10);
    } finally {
      tracer.close();
    }
  });

  it('off never arms', () => {
    const tracer = createTracer({ mode: 'off' });
    tracer.consider({ waitSeconds: 100, poolFull: true });
    assert.equal(tracer.armed, false);
    assert.equal(tracer.pendingByKind(), null);
    tracer.close();
  });
});

describe('tracer against jobs the test controls', function () {
  this.timeout(60000);
  let pending;
  before(async () => {
    pending = await scenario('pending');
  });

  it('K pbkdf2, scrypt and zlib jobs in flight: pending is K for each; sync crypto and zlib are not jobs', () => {
    const { K, inFlight } = pending;
    assert.equal(inFlight.crypto, K.pbkdf2 + K.scrypt);
    assert.equal(inFlight.zlib, K.zlib);
    assert.equal(inFlight.other, 0);
    const byType = Object.fromEntries(pending.callers.map((j) => [j.type, j.pending]));
    assert.deepEqual(byType, { PBKDF2REQUEST: K.pbkdf2, SCRYPTREQUEST: K.scrypt, ZLIB: K.zlib });
  });

  it('after every callback nothing is pending', () => {
    assert.deepEqual(pending.after, { dns: pending.after.dns, fs: 0, crypto: 0, zlib: 0, other: 0 });
  });

  it('job.duration: count and sum match the submit-to-callback times the app measured', () => {
    for (const [name, type] of [['pbkdf2', 'PBKDF2REQUEST'], ['scrypt', 'SCRYPTREQUEST']]) {
      const h = pending.histograms.find((x) => x.type === type);
      const times = pending.times[name];
      assert.equal(h.kind, 'crypto');
      assert.equal(h.count, times.length, type);
      // The app's clock starts just before the call and stops in the callback: the tracer's
      // interval (init to before) lies inside it, a few hundred microseconds shorter at most.
      assert.ok(h.sum <= sum(times), `${type}: ${h.sum} <= ${sum(times)}`);
      assert.ok(h.sum >= sum(times) - 0.005 * times.length, `${type}: ${h.sum} vs ${sum(times)}`);
      const job = pending.jobs.find((j) => j.type === type);
      assert.equal(job.completed, times.length);
      assert.ok(Math.abs(job.seconds - h.sum) < 1e-9);
    }
  });

  it('zlib: one job per write of a stream, each inside the app\'s own submit-to-callback time', () => {
    const h = pending.histograms.find((x) => x.type === 'ZLIB');
    assert.equal(h.kind, 'zlib');
    assert.ok(h.count >= pending.K.zlib, `${h.count} writes`);
    assert.ok(h.sum <= sum(pending.times.zlib), `${h.sum} <= ${sum(pending.times.zlib)}`);
  });

  it('call sites are the app\'s own file:line', () => {
    const callers = Object.fromEntries(pending.callers.map((j) => [j.type, j.callers]));
    assert.deepEqual(callers.PBKDF2REQUEST, [{ caller: lineOf('SUBMIT-PBKDF2'), count: pending.K.pbkdf2 }]);
    assert.deepEqual(callers.SCRYPTREQUEST, [{ caller: lineOf('SUBMIT-SCRYPT'), count: pending.K.scrypt }]);
    assert.equal(callers.ZLIB.length, 1);
    assert.equal(callers.ZLIB[0].count, pending.K.zlib);
  });
});

describe('tracer routes', function () {
  this.timeout(60000);

  const routeCases = [[]];
  if (NODE_MAJOR >= 24) routeCases.push(['--no-async-context-frame']);
  for (const flags of routeCases) it(`routes: work submitted while serving a request carries its method and route, across awaits, interleaved${flags.length ? ` (${flags.join(' ')})` : ''}`, async () => {
    const { jobs } = await scenario('routes', {}, flags);
    const pbkdf2 = jobs.find((j) => j.type === 'PBKDF2REQUEST');
    const zlib = jobs.find((j) => j.type === 'ZLIB');
    assert.equal(pbkdf2.completed, 6);
    assert.deepEqual(pbkdf2.routes, [{ method: 'POST', route: '/login', count: 5 }], 'the sixth job ran outside any request');
    assert.deepEqual(zlib.routes.map((r) => [r.method, r.route]), [['GET', '/zip/:id']]);
  });

  for (const flags of routeCases) it(`routes: work submitted after reading the body (in the 'end' listener, after awaiting it, from timers) carries the request's route; a keep-alive request not followed never inherits the previous one's${flags.length ? ` (${flags.join(' ')})` : ''}`, async () => {
    // The app's clock would split the figures between intervals: the test samples by itself.
    const r = await scenario('body', { UVSCOPE_INTERVAL_MS: '3600000' }, flags);
    assert.deepEqual(r.replies, Array(14).fill(true), 'every reply is the key of its body');
    assert.equal(r.concurrent.completed, 12);
    const expected = [['POST', '/end', 2], ['POST', '/await', 2], ['POST', '/iterate', 2], ['POST', '/timer', 2], ['POST', '/end-timer', 2]];
    // An async 'end' listener resumes after its await in the frame the parser captured for the
    // connection, with no resource of the request current: on Node 24+ without promise hooks
    // (trackPromises: false) its work has no route (never another request's); with promise hooks
    // (Node 20/22, --no-async-context-frame) it has its own.
    if (!supportsTrackPromises() || flags.includes('--no-async-context-frame')) expected.push(['POST', '/end-await', 2]);
    const byRoute = (a, b) => a[1].localeCompare(b[1]);
    assert.deepEqual(r.concurrent.routes.sort(byRoute), expected.sort(byRoute));
    assert.deepEqual(r.keepAlive, { completed: 2, routes: [['POST', '/end', 1]] }, 'the second request (POST /end-b) was not followed');
  });

  it('routes are followed in bursts: the first 100 requests from arming, none after them, 100 more at the first sample 10 s after the burst began', async () => {
    const http = require('http');
    const crypto = require('crypto');
    let t = 1000000;
    const tracer = createTracer({ mode: 'on', now: () => t });
    const server = http.createServer((req, res) => {
      crypto.pbkdf2('x', 'salt', 1, 8, 'sha256', () => res.end('ok'));
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const get = (n, path) => Promise.all(Array.from({ length: n }, () => new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: server.address().port, path, agent }, (res) => {
        res.resume();
        res.on('end', resolve);
      }).on('error', reject);
    })));
    const followed = () => {
      const job = tracer.collect().jobs.find((j) => j.type === 'PBKDF2REQUEST');
      return { completed: job ? job.completed : 0, routes: job ? job.routes.map((r) => [r.route, r.count]) : [] };
    };
    try {
      await get(120, '/a');
      assert.deepEqual(followed(), { completed: 120, routes: [['/a', 100]] }, 'the first 100 from arming');
      t += 5000;
      await get(50, '/b');
      assert.deepEqual(followed(), { completed: 50, routes: [] }, 'no burst 5 s after the last began');
      t += 5000;
      followed(); // the sample 10 s after: a new burst begins
      await get(120, '/c');
      assert.deepEqual(followed(), { completed: 120, routes: [['/c', 100]] });
    } finally {
      agent.destroy();
      server.close();
      tracer.close();
    }
  });
});

describe('tracer: arming, the app\'s own hooks, busy pool threads, auto mode', function () {
  this.timeout(60000);

  it('jobs from before arming are never counted: pending never negative, completions only of jobs seen starting', async () => {
    const r = await scenario('armLate', { UVSCOPE_TRACER: 'auto' });
    assert.equal(r.armed, true);
    assert.equal(r.inFlight.crypto, 2);
    assert.equal(r.after.crypto, 0);
    assert.deepEqual(r.completed, [['PBKDF2REQUEST', 2]]);
  });

  it('the app\'s own async_hooks and AsyncLocalStorage work as without uvscope; stop() while armed restores everything', async () => {
    const r = await scenario('own');
    assert.deepEqual(r.stores, [1, 2, 3]);
    assert.equal(r.seen.init, 3 + 2 + 1, 'the app\'s hook sees every pbkdf2 job');
    assert.equal(r.pendingWhileArmed.other, 0, 'an AsyncResource of JS code is not threadpool work');
    assert.deepEqual(r.outputs, ['same bytes', r.expectedKey, r.expectedKey, 'same bytes']);
    assert.equal(r.armedAfterStop, false);
    assert.equal(r.restored.run, true, 'zlib write is native again after stop()');
  });

  it('busy pool threads: computing + runnable equal the K CPU jobs kept running (Node 22+)', async function () {
    if (process.platform !== 'linux') this.skip();
    for (const K of [1, 3]) {
      const r = await scenario('busy', { UVSCOPE_TRACER: 'off', FIXTURE_K: String(K) });
      if (NODE_MAJOR < 22) {
        assert.equal(r.busy.available, false);
        assert.match(r.busy.reason, /does not name its pool threads/);
        continue;
      }
      assert.equal(r.busy.available, true, JSON.stringify(r.busy));
      assert.equal(r.busy.threads, 4);
      const busy = r.busy.computing + r.busy.runnable;
      assert.ok(Math.abs(busy - K) <= 0.4, `K=${K}: computing ${r.busy.computing} + runnable ${r.busy.runnable}`);
    }
  });

  it('busy pool threads with very short jobs (pool otherwise idle): within the jobs\' own occupancy; each wake-up is a scheduling, its wait per scheduling is given (Node 22+)', async function () {
    if (process.platform !== 'linux' || NODE_MAJOR < 22) this.skip();
    const r = await scenario('tiny', { UVSCOPE_TRACER: 'off', UVSCOPE_INTERVAL_MS: '3600000' });
    const { busy } = r;
    assert.equal(busy.available, true, JSON.stringify(busy));
    assert.ok(r.jobsPerSecond > 500, `${r.jobsPerSecond} jobs/s`);
    // One job in flight at a time: the thread that ran it sleeps before the next is submitted, so
    // every job is at least one arrival on a CPU.
    assert.ok(busy.schedulings >= 0.9 * r.jobsPerSecond, `${busy.schedulings} schedulings/s for ${r.jobsPerSecond} jobs/s`);
    // Time on a CPU or waiting for one lies inside the jobs' submit-to-callback times (the two
    // intervals differ by the sample's own microseconds).
    assert.ok(busy.computing + busy.runnable <= r.inFlight + 0.05, `computing ${busy.computing} + runnable ${busy.runnable} vs ${r.inFlight} jobs in flight`);
    assert.ok(Math.abs(busy.meanWaitSeconds * busy.schedulings - busy.runnable) <= 0.01 + 0.01 * busy.runnable, JSON.stringify(busy));
  });

  it('auto: stays off on a healthy app, arms within seconds of a saturated pool, disarms after its window', async () => {
    const r = await scenario('auto', {
      UVSCOPE_TRACER: 'auto', UVSCOPE_INTERVAL_MS: '250', UVSCOPE_TRACER_WINDOW_MS: '2000', UVSCOPE_TRACER_COOLDOWN_MS: '60000',
      FIXTURE_HEALTHY_MS: '2500', FIXTURE_SATURATED_MS: '5500',
    });
    assert.equal(r.healthy.armings, 0, 'healthy app: never armed');
    assert.equal(r.tracer.armings, 1, JSON.stringify(r));
    const on = r.events.find((e) => e.armed);
    const off = r.events.find((e) => !e.armed);
    assert.ok(on.atMs - r.saturatedAtMs < 3000, `armed ${on.atMs - r.saturatedAtMs} ms after saturation`);
    assert.ok(off && off.atMs - on.atMs >= 1900 && off.atMs - on.atMs < 4000, JSON.stringify(r.events));
    assert.equal(r.sawPbkdf2, true);
    assert.ok(r.tracer.armedSeconds >= 2 && r.tracer.armedSeconds < 3, String(r.tracer.armedSeconds));
  });
});

describe('tracer figures for exporters', function () {
  it('Prometheus: pending by kind, job.duration by kind and type, tracer armed; one channel event per job for OTLP and DogStatsD', async () => {
    const { published } = require('../../../lib/core/channels');
    const events = [];
    const onJob = (m) => events.push(m);
    published.threadpoolJobEnd.subscribe(onJob);
    const { Registry } = require('prom-client');
    const uvscope = require('../../../lib');
    const registry = new Registry();
    const agent = uvscope.start({ exporters: 'prometheus', prometheus: { registry }, tracer: { mode: 'on' }, intervalMs: 3600000 });
    try {
      agent.sampleNow();
      await new Promise((resolve) => require('crypto').pbkdf2('a', 'b', 1000, 32, 'sha256', resolve));
      agent.sampleNow();
      const text = await registry.metrics();
      assert.match(text, /^nodejs_uv_threadpool_job_duration_seconds_count\{kind="crypto",type="PBKDF2REQUEST"\} 1$/m);
      assert.match(text, /^nodejs_uv_threadpool_pending\{kind="crypto"\} 0$/m);
      assert.match(text, /^uvscope_tracer_armed 1$/m);
      const pbkdf2 = events.filter((e) => e.type === 'PBKDF2REQUEST');
      assert.equal(pbkdf2.length, 1);
      assert.equal(pbkdf2[0].kind, 'crypto');
      const h = agent.latest.points.find((p) => p.name === 'nodejs.uv.threadpool.job.duration' && p.attributes['nodejs.uv.threadpool.job.type'] === 'PBKDF2REQUEST');
      assert.equal(pbkdf2[0].seconds, h.histogram.sum);
    } finally {
      published.threadpoolJobEnd.unsubscribe(onJob);
      await uvscope.stop();
    }
  });
});

describe('tracer failures', function () {
  it('a failure inside a hook is caught, reported once and disarms; the app\'s job completes as without uvscope', async () => {
    const warnings = [];
    const onWarning = (w) => warnings.push(w);
    process.on('warning', onWarning);
    let calls = 0;
    const tracer = createTracer({ mode: 'on', hrtime: () => { calls++; throw new Error('clock broke'); } });
    try {
      assert.equal(tracer.armed, true);
      const crypto = require('crypto');
      const key = await new Promise((resolve, reject) => crypto.pbkdf2('a', 'b', 1000, 32, 'sha256', (err, k) => (err ? reject(err) : resolve(k))));
      assert.deepEqual(key, crypto.pbkdf2Sync('a', 'b', 1000, 32, 'sha256'));
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(tracer.armed, false);
      assert.equal(calls, 1);
      const ours = warnings.filter((w) => w.code === 'UVSCOPE_INTERNAL_ERROR' && /tracer failed/.test(w.message));
      assert.equal(ours.length, 1);
      assert.match(ours[0].message, /clock broke/);
    } finally {
      process.off('warning', onWarning);
      tracer.close();
    }
  });
});
