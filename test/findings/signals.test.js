'use strict';

// The interval's signals (lib/findings/signals.js): each judgement made once, on figures the test
// sets, and read as they are by the rules and the snapshot (snapshot.signals, from a real agent).

const assert = require('node:assert/strict');
const { createFindingsEngine, LIMITS } = require('../../lib/findings/engine');
const { SIGNAL_LIMITS } = require('../../lib/findings/signals');
const RULES = require('../../lib/findings/index');
const { ROOT, runNode, lastJson } = require('../helpers/child');

// One 1 s interval: the loop's delay max and p99, the main thread's time on a CPU and waiting for
// one (null: not known), the longest block on a CPU where the sampler measured it.
function sample(time, { max = 0.01, p99 = 0.005, cpu = null, wait = null, onCpu = null } = {}) {
  const points = [
    { name: 'nodejs.eventloop.delay.max', attributes: {}, value: max },
    { name: 'nodejs.eventloop.delay.p99', attributes: {}, value: p99 },
  ];
  return { time, points, details: { eventloop: { mainThreadCpuSeconds: cpu, mainThreadWaitSeconds: wait, blockedOnCpuMaxSeconds: onCpu } } };
}

// The signals after each of the samples (1 s apart; the first is startup).
function signals(list) {
  const engine = createFindingsEngine({ checkQuiet: true, intervalMs: 1000, startTime: 0 });
  return list.map((s, i) => {
    const findings = engine.evaluate(sample((i + 1) * 1000, s));
    return { ...engine.signals(), findings };
  });
}

describe('findings/signals: each judgement about an interval, made once', () => {
  it('every limit a signal reads is declared in signals.js and documented with exactly one rule', () => {
    for (const name of Object.keys(SIGNAL_LIMITS)) {
      const owners = RULES.filter((r) => name in r.limits).map((r) => r.id);
      assert.equal(owners.length, 1, `${name}: ${owners}`);
      assert.equal(LIMITS[name], SIGNAL_LIMITS[name]);
    }
  });

  it('loopBlocked: the longest delay less the main thread\'s wait for a CPU, 0 below 100 ms (max) and 50 ms (p99), 0 at startup', () => {
    const got = signals([
      { max: 0.3, p99: 0.3 }, // startup: the app loading its modules
      { max: 0.3, p99: 0.02 }, // blocked 300 ms, nothing known of the CPU wait
      { max: 0.3, p99: 0.02, cpu: 0.1, wait: 0.3 }, // on a CPU a quarter of its runnable time: 75 ms
      { max: 0.3, p99: 0.02, cpu: 0.4, wait: 0.1, onCpu: 0.2 }, // measured on the CPU: 200 ms
      { max: 0.09, p99: 0.06 }, // the p99 crosses: the max is the block
      { max: 0.09, p99: 0.04 }, // neither
    ]);
    assert.deepEqual(got.map((s) => s.loopBlockedSeconds), [0, 0.3, 0, 0.2, 0.09, 0]);
    assert.deepEqual(got.map((s) => s.loopRanLate), [true, true, true, true, true, false]);
    // Not counted for the lookups' discount while blocked; otherwise the delay times the busy share
    // (no utilization in the sample: busy throughout).
    assert.deepEqual(got.map((s) => s.callbackWaitSeconds), [0.3, 0.3, 0.3, 0.3, 0.09, 0.09]);
  });

  it('eventloop-blocked reads it: fires on 2 blocked intervals, and its impact is the sum of loopBlocked', () => {
    const got = signals([{}, { max: 0.3 }, { max: 0.05 }, { max: 0.2, cpu: 0.4, wait: 0.1, onCpu: 0.15 }]);
    const f = got[3].findings.find((x) => x.id === 'eventloop-blocked');
    assert.ok(f, JSON.stringify(got[3].findings));
    // (impact figures are rounded to 0.1 ms)
    assert.equal(f.impact.loopBlockedSeconds, Math.round(got.reduce((a, s) => a + s.loopBlockedSeconds, 0) * 1e4) / 1e4);
    assert.equal(f.impact.loopBlockedSeconds, 0.45);
    // healthy twin: the same lateness, all of it a wait for a CPU (an overloaded host)
    const host = signals([{}, { max: 0.3, cpu: 0.05, wait: 0.6, onCpu: 0.02 }, { max: 0.2, cpu: 0.05, wait: 0.6, onCpu: 0.02 }]);
    assert.deepEqual(host.map((s) => s.loopBlockedSeconds), [0, 0, 0]);
    assert.equal(host[2].findings.find((x) => x.id === 'eventloop-blocked'), undefined);
  });

  it('a snapshot carries the latest interval\'s signals, frozen (a real agent: a loop blocked 300 ms, then a quiet interval)', async () => {
    const r = await runNode(['-e', `
      const uvscope = require(${JSON.stringify(ROOT)});
      const agent = uvscope.start({ exporters: 'none', intervalMs: 3600000 });
      agent.sampleNow();
      setTimeout(() => {
        const quiet = agent.sampleNow();
        const end = Date.now() + 300;
        while (Date.now() < end);
        setTimeout(() => {
          const blocked = agent.sampleNow();
          console.log(JSON.stringify({ quiet: quiet.signals, blocked: blocked.signals, frozen: Object.isFrozen(blocked.signals) }));
          uvscope.stop();
        }, 20);
      }, 50);
    `]);
    assert.equal(r.code, 0, r.stderr);
    const out = lastJson(r.stdout);
    assert.equal(out.frozen, true);
    assert.deepEqual(Object.keys(out.blocked).sort(), ['callbackWaitSeconds', 'cpuStarvedLoop', 'cpuStarvedPool', 'loopBlockedSeconds', 'loopRanLate', 'poolCpuWaitShare', 'poolHeld', 'poolThreadsStarved', 'poolWaitSeconds']);
    assert.equal(out.quiet.loopBlockedSeconds, 0);
    // the order of magnitude: the 300 ms block, less any wait for a CPU on a busy machine
    assert.ok(out.blocked.loopBlockedSeconds >= 0.1 && out.blocked.loopBlockedSeconds < 1, JSON.stringify(out.blocked));
  });
});
