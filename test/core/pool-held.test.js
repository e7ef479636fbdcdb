'use strict';

// When the pool counts as held (lib/core/pool-held.js): the one test the threadpool sampler arms
// its tracer on and the findings' signal poolHeld reads.

const assert = require('node:assert/strict');
const { POOL_HELD, waitBeyondLoop, poolHeld } = require('../../lib/core/pool-held');
const { _internal: { createProbe } } = require('../../lib/sources/threadpool/sampler');

describe('core/pool-held: a probe\'s wait for a thread beyond the loop\'s own delay', () => {
  it('the larger of two lower bounds: the loop\'s idle time during the flight, and the wait less the loop\'s longest delay', () => {
    // The pool held 120 ms with the loop idle: all of it.
    assert.equal(waitBeyondLoop({ wait: 0.12, idle: 0.12 }), 0.12);
    // A 300 ms block with the pool idle: the answer waited for the loop, the loop was never idle.
    assert.equal(waitBeyondLoop({ wait: 0.3, idle: 0, loopDelay: 0.3, seconds: 1 }), 0);
    // A busy loop (short callbacks, little idle time) and a held pool: the delay bound tells.
    assert.ok(Math.abs(waitBeyondLoop({ wait: 0.2, idle: 0.02, loopDelay: 0.01, seconds: 1 }) - 0.19) < 1e-12);
    // Idle time never counts for more than the wait.
    assert.equal(waitBeyondLoop({ wait: 0.05, idle: 0.08 }), 0.05);
    // A probe stuck while the loop was blocked half the interval: the delay bound says nothing.
    assert.equal(waitBeyondLoop({ wait: 0.9, idle: 0, stuck: true, loopDelay: 0.6, seconds: 1 }), 0);
    // Neither known (points only): the wait as it is; no reading: null.
    assert.equal(waitBeyondLoop({ wait: 0.2 }), 0.2);
    assert.equal(waitBeyondLoop({ wait: null, idle: 0.1 }), null);
  });

  it('held at poolWaitS (50 ms) and over, by the limits given', () => {
    assert.equal(POOL_HELD.poolWaitS, 0.05);
    assert.equal(poolHeld(0.05), true);
    assert.equal(poolHeld(0.049), false);
    assert.equal(poolHeld(null), false);
    assert.equal(poolHeld(0.1, { poolWaitS: 0.25 }), false);
  });

  it('a probe\'s held wait is the loop\'s idle time during its flight, never more than its wait', async () => {
    let idleMs = 1000;
    // A job that finishes after 30 ms, during which the loop (by the injected clock) idled 20 ms.
    const probe = createProbe('probe:test', (done) => setTimeout(() => {
      idleMs += 20;
      done();
    }, 30), () => idleMs);
    probe.launch();
    await new Promise((resolve) => setTimeout(resolve, 60));
    const f = probe.takeInterval();
    // 30 ms by libuv's clock, which the loop reads once an iteration in whole ms: by hrtime the
    // timer may fire up to a ms early (29.6 ms once in CI).
    assert.ok(f.maxWaitSeconds >= 0.029 && f.maxWaitSeconds < 0.06, String(f.maxWaitSeconds));
    assert.equal(f.heldSeconds, 0.02);
    assert.equal(f.inFlightSeconds, 0);
    // In flight at the sample: idle so far (capped at its wait so far).
    const stuck = createProbe('probe:test', () => {}, () => idleMs);
    stuck.launch();
    idleMs += 5000;
    const g = stuck.takeInterval();
    assert.ok(g.inFlightSeconds > 0 && g.heldSeconds === g.inFlightSeconds, JSON.stringify(g));
    assert.equal(probe.takeInterval().heldSeconds, 0);
  });
});
