'use strict';

const assert = require('node:assert/strict');
const { requireCgroup, runUnderQuota } = require('../helpers/cgroup');

// Real cgroups with a CPU quota (support/cgroup.js); the app (test/fixtures/cpu-burn-app.js)
// burns CPU in its loop and on the pool, or does little, and prints its last snapshot's findings.
describe('findings: cpu-throttled under a real CPU quota', function () {
  this.timeout(90000);
  before(function () {
    requireCgroup(this);
  });

  it('fires for an app wanting ~2 CPUs in a 0.5 CPU quota, with the quota, the throttled share and time, and what used the CPU', async () => {
    const r = await runUnderQuota(0.5, { SECONDS_TO_RUN: '4', LOOP_BURN_MS: '20', POOL_JOBS: '4' });
    const f = r.app.findings.find((x) => x.id === 'cpu-throttled');
    assert.ok(f, JSON.stringify(r.app.findings.map((x) => x.id)));
    const e = f.evidence;
    assert.equal(e.quotaCpus, 0.5);
    assert.equal(e.budgetCpus, 0.5);
    // The window's figures are differences of the counters, within what the cgroup counted.
    assert.ok(e.periods <= r.stat.periods && e.periods >= 20, `${e.periods} of ${r.stat.periods} periods`);
    assert.ok(e.throttledPeriods <= r.stat.throttledPeriods && e.throttledShare >= 0.5, `${e.throttledPeriods} throttled, share ${e.throttledShare}`);
    // Held to the cgroup's own figure, which covers the window and the interval before it:
    // throttled time is the rest of each period once the quota is used, which depends on the CPU
    // the machine leaves the cgroup (3.3-4.8 s in 4 s at a load average of 8; 0.25-0.44 s before
    // support/cgroup.js gave the cgroup ten times the default weight).
    assert.ok(e.throttledSeconds <= r.stat.throttledSeconds + 0.01 && e.throttledSeconds >= 0.5 * r.stat.throttledSeconds && e.throttledSeconds > 0.05, `throttled ${e.throttledSeconds} s of ${r.stat.throttledSeconds}`);
    // It can use no more than its quota (and wanted more: it was held back).
    assert.ok(e.processCpuPerSecond <= 0.5 * 1.15 && e.processCpuPerSecond >= 0.25, `process CPU ${e.processCpuPerSecond}/s`);
    assert.match(f.summary, new RegExp(`0\\.5 CPU of a ${e.affinityCpus}-CPU host`));
    assert.match(f.summary, /throttled the process in \d+ % of \d+ periods/);
    assert.match(f.advice[0], /Raise the container's CPU limit/);
    assert.match(f.advice[2], /0\.5 CPU budget/);
    assert.ok(f.impact.score > 0.1, `impact ${f.impact.score}`);
  });

  it('twin: 2 CPUs of quota and an idle-ish app (a timer and the agent) is never throttled: no finding', async () => {
    const r = await runUnderQuota(2, { SECONDS_TO_RUN: '3', LOOP_PAUSE_MS: '100' });
    assert.equal(r.app.budget.value, Math.min(2, r.app.cpu.affinityCpus));
    assert.ok(r.app.periods.value > 0, 'the counters are there, under a quota');
    assert.deepEqual(r.app.findings.map((x) => x.id).filter((id) => id === 'cpu-throttled'), []);
  });

  it('twin: 0.5 CPU of quota and a busy app below it (5 ms of CPU every 15 ms, ~0.3 CPU): no finding', async () => {
    const r = await runUnderQuota(0.5, { SECONDS_TO_RUN: '3', LOOP_BURN_MS: '5', LOOP_PAUSE_MS: '10' });
    assert.equal(r.app.budget.value, 0.5);
    assert.ok(r.stat.periods >= 20, `${r.stat.periods} periods: enough for the rule to judge`);
    // Busy, not idle: a fifth of a CPU or more, yet within the quota in most periods.
    assert.ok(r.app.cpu.processCpuTotalSeconds >= 0.2 * 3, `${r.app.cpu.processCpuTotalSeconds} s of CPU in 3 s`);
    assert.ok(r.stat.throttledPeriods < 0.25 * r.stat.periods, `${r.stat.throttledPeriods} of ${r.stat.periods} periods throttled`);
    assert.ok(!r.app.findings.some((x) => x.id === 'cpu-throttled'), JSON.stringify(r.app.findings));
  });
});

describe('findings: advice that counts CPUs counts the budget', () => {
  const os = require('os');
  const { availableCores } = require('../../lib/findings/cpu');
  const { summarizeInterval } = require('../../lib/findings/window');

  it('pools are sized to process.cpu.budget (whole CPUs, at least 1), the host\'s CPUs only without one', () => {
    assert.equal(availableCores(0.5), 1);
    assert.equal(availableCores(2.5), 2);
    assert.equal(availableCores(4), 4);
    assert.equal(availableCores(undefined), typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length);
  });

  it('the window\'s summary carries the snapshot\'s budget, which threadpool-saturated reads', () => {
    const points = [{ name: 'process.cpu.budget', attributes: { 'process.cpu.budget.source': 'cgroup-v1' }, value: 0.5 }];
    assert.equal(summarizeInterval({ time: 2000, points, details: {} }, null, 1000).cpuBudget, 0.5);
    assert.equal(summarizeInterval({ time: 2000, points: [], details: {} }, null, 1000).cpuBudget, undefined);
  });
});
