'use strict';
// The findings engine on snapshots whose figures the test sets: where dns-tail-latency puts the
// tail, and how impact orders findings and sets their severity.

const assert = require('node:assert/strict');
const { createFindingsEngine } = require('../../lib/findings/engine');

const INTERVAL_MS = 1000;

function host(name, fields) {
  return { name, lookups: 0, errors: 0, seconds: 0, queueWaitSeconds: 0, resolveSeconds: 0, queuedLookups: 0, maxSeconds: 0, duplicates: 0, maxInFlight: 0, timeouts: 0, inFlight: 0, totalLookups: 0, callers: [], recentLookups: 0, p50: null, p99: null, stddev: null, tail: null, ...fields };
}

function sample(t, { hosts = [], delayMax = 0.001, delayP99 = 0.001, eventloop } = {}) {
  const points = [
    { name: 'nodejs.eventloop.delay.max', attributes: {}, value: delayMax },
    { name: 'nodejs.eventloop.delay.p99', attributes: {}, value: delayP99 },
  ];
  return { time: t, points, details: { dns: { inFlight: 0, hosts }, eventloop } };
}

function run(samples) {
  const engine = createFindingsEngine({ intervalMs: INTERVAL_MS, startTime: 0 });
  let findings = [];
  samples.forEach((s, i) => {
    findings = engine.evaluate({ ...s, time: (i + 1) * INTERVAL_MS });
  });
  return findings;
}

// A host whose p99 is 150 ms over a 3 ms median; the slowest lookups spent `wait` in the queue.
const tailHost = (wait) => host('api.test', {
  lookups: 30, seconds: 30 * 0.009, recentLookups: 150, p50: 0.003, p99: 0.15, stddev: 0.027, mean: 0.009,
  tail: { lookups: 2, meanSeconds: 0.15, queueWaitSeconds: wait, resolveSeconds: 0.15 - wait },
});

describe('findings engine: dns-tail-latency and impact', () => {
  it('puts the tail at the resolver when the slowest lookups did not wait and the loop was not blocked', () => {
    const f = run([sample(0, { hosts: [tailHost(0)] })]).find((x) => x.id === 'dns-tail-latency');
    assert.equal(f.evidence.place, 'resolver');
    assert.match(f.summary, /3 ms at the median but 150 ms at p99 \(standard deviation 27 ms, over 150 lookups\)/);
    assert.ok(f.advice.some((a) => /hedging/i.test(a) && /3 ms/.test(a)));
    // 2 tail lookups x 147 ms above the median, in 1 s.
    assert.equal(f.impact.requests, 2);
    assert.ok(Math.abs(f.impact.secondsPerSecond - 0.294) < 0.001, JSON.stringify(f.impact));
  });

  it('puts it at the DNS slots when the slowest lookups spent most of it waiting for one, and advises against hedging', () => {
    const f = run([sample(0, { hosts: [tailHost(0.12)] })]).find((x) => x.id === 'dns-tail-latency');
    assert.equal(f.evidence.place, 'dns-slots');
    assert.ok(f.advice.some((a) => /Do not hedge/.test(a)));
  });

  it('puts it at the event loop when the loop was blocked about as long as the tail', () => {
    const f = run([sample(0), sample(0, { hosts: [tailHost(0)], delayMax: 0.14, eventloop: { mainThreadCpuSeconds: 0.5, mainThreadWaitSeconds: 0 } })]).find((x) => x.id === 'dns-tail-latency');
    assert.equal(f.evidence.place, 'event-loop');
  });

  it('needs enough lookups and a tail far above the median', () => {
    assert.equal(run([sample(0, { hosts: [{ ...tailHost(0), recentLookups: 99 }] })]).length, 0);
    assert.equal(run([sample(0, { hosts: [{ ...tailHost(0), p99: 0.01 }] })]).length, 0);
  });

  it('a long delay while the main thread waited for a CPU is not a blocked loop', () => {
    const late = { delayMax: 0.2, delayP99: 0.2 };
    assert.equal(run([sample(0), sample(0, { ...late, eventloop: { mainThreadCpuSeconds: 0.05, mainThreadWaitSeconds: 0.6 } })]).length, 0);
    const onCpu = { ...late, eventloop: { mainThreadCpuSeconds: 0.6, mainThreadWaitSeconds: 0.05 } };
    assert.equal(run([sample(0), sample(0, onCpu)]).length, 0, 'one stall is an odd sample');
    const f = run([sample(0), sample(0, onCpu), sample(0, onCpu)]);
    assert.deepEqual(f.map((x) => x.id), ['eventloop-blocked']);
    assert.ok(f[0].impact.loopBlockedSeconds > 0.18);
  });

  it('with the loop timed against the thread\'s CPU time, only the lateness while it ran counts', () => {
    const late = { delayMax: 0.3, delayP99: 0.3 };
    // 300 ms late, but the thread ran 20 ms of it: it waited for a CPU.
    assert.equal(run([sample(0), sample(0, { ...late, eventloop: { mainThreadCpuSeconds: 0.5, mainThreadWaitSeconds: 0.3, blockedOnCpuMaxSeconds: 0.02 } })]).length, 0);
    const ran = { ...late, eventloop: { mainThreadCpuSeconds: 0.5, mainThreadWaitSeconds: 0.3, blockedOnCpuMaxSeconds: 0.25 } };
    const f = run([sample(0), sample(0, ran), sample(0, ran)]);
    assert.deepEqual(f.map((x) => x.id), ['eventloop-blocked']);
    assert.equal(f[0].impact.loopBlockedSeconds, 0.5);
  });

  it('the first interval (the app\'s and the agent\'s startup) is not a blocked loop', () => {
    assert.equal(run([sample(0, { delayMax: 0.5, delayP99: 0.5 })]).length, 0);
  });

  it('dns-no-cache: a name looked up again and again at a cost fires; the same lookups slowed by a blocked loop do not (the loop is the cause)', () => {
    // 30 lookups of one name a second, each 40 ms from call to callback: 1.2 s per second.
    const repeated = { hosts: [host('api.test', { lookups: 30, seconds: 1.2, maxInFlight: 4, callers: [{ caller: 'app.js:1', count: 30 }] })] };
    const healthyLoop = run([sample(0), ...Array.from({ length: 4 }, () => sample(0, repeated))]);
    assert.deepEqual(healthyLoop.map((x) => x.id), ['dns-no-cache']);
    // The twin: the same lookups in intervals where the loop was blocked on CPU for 120 ms.
    const blocked = { delayMax: 0.12, delayP99: 0.12, eventloop: { mainThreadCpuSeconds: 0.9, mainThreadWaitSeconds: 0 } };
    const slowLoop = run([sample(0), ...Array.from({ length: 4 }, () => sample(0, { ...repeated, ...blocked }))]);
    assert.deepEqual(slowLoop.map((x) => x.id), ['eventloop-blocked']);
    // A late loop that was waiting for a CPU is not a blocked loop: the lookups' time counts.
    const starved = { delayMax: 0.12, delayP99: 0.12, eventloop: { mainThreadCpuSeconds: 0.2, mainThreadWaitSeconds: 0.7, blockedOnCpuMaxSeconds: 0.01 } };
    assert.deepEqual(run([sample(0), ...Array.from({ length: 4 }, () => sample(0, { ...repeated, ...starved }))]).map((x) => x.id), ['dns-no-cache']);
  });

  it('sorts findings by impact and derives severity from it', () => {
    const blocked = { delayMax: 1.5, delayP99: 1.5, eventloop: { mainThreadCpuSeconds: 0.9, mainThreadWaitSeconds: 0 } };
    const f = run([sample(0), sample(0, blocked), sample(0, { ...blocked, hosts: [tailHost(0)] })]);
    assert.deepEqual(f.map((x) => x.id), ['eventloop-blocked', 'dns-tail-latency']);
    assert.equal(f[0].severity, 'critical', '3 s blocked in 3 s');
    assert.equal(f[1].severity, 'warning', '0.1 s lost per second');
    assert.ok(f[0].impact.score > f[1].impact.score);
  });
});
