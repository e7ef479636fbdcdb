'use strict';

const assert = require('node:assert/strict');
const { requireCgroup, runUnderQuota } = require('../helpers/cgroup');

describe('sources/cpu: under a real CPU quota', function () {
  this.timeout(60000);
  before(function () {
    requireCgroup(this);
  });

  it('the budget is the quota the test set (0.5 CPU), and the throttling counters are the cgroup\'s own cpu.stat', async () => {
    // The loop burning 20 ms turns and 4 pbkdf2 jobs in flight want ~2 CPUs: throttled every period.
    const r = await runUnderQuota(0.5, { SECONDS_TO_RUN: '3', LOOP_BURN_MS: '20', POOL_JOBS: '4' });
    assert.equal(r.app.budget.value, 0.5);
    assert.equal(r.app.budget.attributes['process.cpu.budget.source'], r.version);
    assert.equal(r.app.cpu.quotaCpus, 0.5);
    // The app's last sample came just before it exited; the test read cpu.stat after the exit,
    // whose teardown may add a period or two.
    const { periods, throttledPeriods, throttledSeconds } = r.stat;
    assert.ok(periods >= 25, `${periods} periods in 3 s of work`);
    assert.ok(r.app.periods.value <= periods && r.app.periods.value >= periods - 3, `periods ${r.app.periods.value} vs cpu.stat ${periods}`);
    assert.ok(r.app.throttledPeriods.value <= throttledPeriods && r.app.throttledPeriods.value >= throttledPeriods - 3, `throttled ${r.app.throttledPeriods.value} vs ${throttledPeriods}`);
    assert.ok(throttledPeriods >= periods / 2, `${throttledPeriods} of ${periods} periods throttled`);
    assert.ok(Math.abs(r.app.throttledTime.value - throttledSeconds) <= 0.1 + 0.05 * throttledSeconds, `throttled ${r.app.throttledTime.value} s vs ${throttledSeconds} s`);
    assert.ok(throttledSeconds > 0.5, `throttled ${throttledSeconds} s`);
    // Ground truth for the unit: 0.5 CPU over the periods counted bounds the CPU the process got.
    assert.ok(r.app.cpu.processCpuTotalSeconds <= 0.5 * periods * 0.1 + 0.1, `${r.app.cpu.processCpuTotalSeconds} s of CPU in ${periods} periods of 0.05 s`);
  });
});
