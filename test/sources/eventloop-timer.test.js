'use strict';

// Timer mode's adaptive timer (lib/sources/eventloop-timer.js): 1 s periods while the loop is idle,
// 100 ms firings while it is quiet, 10 ms while it is busy, and a blocked loop of 100 ms seen in
// full in each.

const assert = require('node:assert/strict');
const { performance } = require('perf_hooks');
const { createEventLoopSampler } = require('../../lib/sources/eventloop');

const value = (points, name) => (points.find((p) => p.name === name) || {}).value;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Ground truth: the main thread blocked for exactly ms (it sleeps, so a loaded machine cannot
// stretch it the way it stretches a busy loop).
const blockFor = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const hasLoopCount = () => Boolean(performance.nodeTiming.uvMetricsInfo);

describe('samplers/eventloop: timer mode, quiet and busy periods', function () {
  this.timeout(20000);
  let sampler;
  let busy;
  afterEach(() => {
    if (busy) clearInterval(busy);
    busy = null;
    if (sampler) sampler.close();
    sampler = null;
  });

  it('quiet: starts at 10 ms, turns to 100 ms after a quiet second, then reads near zero, reads near zero, and a 100 ms block reads 100 ms wherever it falls between two firings', async function () {
    if (!hasLoopCount()) this.skip(); // Node before 20.18: always 10 ms
    sampler = createEventLoopSampler({ mode: 'timer' });
    assert.equal(sampler.timerPeriodMs, 10, 'it starts at 10 ms (startup is busy; a short-lived process still gets firings)');
    const until = Date.now() + 5000;
    while (sampler.timerPeriodMs !== 100 && Date.now() < until) await sleep(100);
    assert.equal(sampler.timerPeriodMs, 100, 'a quiet second turns it to 100 ms');
    sampler.sample();
    await sleep(350);
    const idle = sampler.sample();
    assert.ok(value(idle, 'nodejs.eventloop.delay.max') < 0.02, `idle max ${value(idle, 'nodejs.eventloop.delay.max')}`);
    assert.ok(value(idle, 'nodejs.eventloop.delay.p90') < 0.005);
    // Blocks starting 5, 40 and 75 ms into a sleep: the timer's firing falls early, in the middle
    // or late in them; a timer's lateness alone would read 100 ms less its wait for the firing.
    for (const offset of [5, 40, 75]) {
      sampler.sample();
      await sleep(offset);
      blockFor(100);
      await sleep(220); // the firing after the block, and one more
      const points = sampler.sample();
      const max = value(points, 'nodejs.eventloop.delay.max');
      assert.ok(max >= 0.095 && max < 0.2, `block at +${offset} ms read ${max} s`);
      const h = points.find((p) => p.name === 'nodejs.eventloop.delay').histogram;
      assert.ok(h.counts.slice(h.bounds.indexOf(0.05) + 1).reduce((a, c) => a + c, 0) >= 1);
      assert.equal(sampler.timerPeriodMs, 100, 'one block is no reason to fire every 10 ms');
    }
    const after = sampler.sample();
    assert.ok(!(value(after, 'nodejs.eventloop.delay.max') > 0.02), 'the block is counted once');
  });

  it('busy: a loop woken every 2 ms turns it to 10 ms, a 100 ms block still reads ~100 ms, and quiet again turns it back', async function () {
    if (!hasLoopCount()) this.skip();
    sampler = createEventLoopSampler({ mode: 'timer' });
    let wakeups = 0;
    busy = setInterval(() => wakeups++, 2);
    await sleep(300);
    assert.equal(sampler.timerPeriodMs, 10, `${wakeups} wake-ups and still ${sampler.timerPeriodMs} ms`);
    sampler.sample();
    await sleep(37);
    blockFor(100);
    await sleep(50);
    const max = value(sampler.sample(), 'nodejs.eventloop.delay.max');
    // A 10 ms timer's lateness: the block less up to one period.
    assert.ok(max >= 0.085 && max < 0.2, `busy loop, block read ${max} s`);
    clearInterval(busy);
    busy = null;
    const until = Date.now() + 5000;
    while (sampler.timerPeriodMs !== 100 && Date.now() < until) await sleep(100);
    assert.equal(sampler.timerPeriodMs, 100, 'quiet again for a second: 100 ms');
  });

  it('idle: a quiet second at 100 ms turns it to 1 s, a sample reads the period so far (one sample per 10 ms; a block is in its own interval, in full) and the block turns it back to 100 ms', async function () {
    if (!hasLoopCount()) this.skip();
    this.timeout(60000);
    sampler = createEventLoopSampler({ mode: 'timer' });
    // A fresh process wakes often (V8's compile and GC tasks): it turns long once that settles.
    const long = async () => {
      const until = Date.now() + 20000;
      while (sampler.timerPeriodMs !== 1000 && Date.now() < until) await sleep(100);
      assert.equal(sampler.timerPeriodMs, 1000, 'idle: a 1 s period');
    };
    const count = (points) => points.find((p) => p.name === 'nodejs.eventloop.delay').histogram.count;
    // A long period read by a sample counts one sample per 10 ms of it, as a 10 ms timer would have
    // taken. Where something else woke the loop in between (a loaded machine), it is 100 ms again:
    // then wait for the next idle stretch.
    let checked = false;
    for (let attempt = 0; attempt < 5 && !checked; attempt++) {
      await long();
      const before = count(sampler.sample());
      const t0 = performance.now();
      await sleep(300);
      if (sampler.timerPeriodMs !== 1000) continue;
      const quiet = sampler.sample();
      const ms = performance.now() - t0;
      assert.ok(value(quiet, 'nodejs.eventloop.delay.max') < 0.02, `idle max ${value(quiet, 'nodejs.eventloop.delay.max')}`);
      assert.ok(Math.abs(count(quiet) - before - ms / 10) <= 2, `${count(quiet) - before} samples in ${ms.toFixed(0)} ms`);
      checked = true;
    }
    assert.ok(checked, 'five idle stretches of 300 ms all woken');
    await long();
    sampler.sample();
    await sleep(200);
    blockFor(100);
    await sleep(30); // the sample comes before the long timer is due
    const max = value(sampler.sample(), 'nodejs.eventloop.delay.max');
    assert.ok(max >= 0.095 && max < 0.2, `block read ${max} s`);
    assert.equal(sampler.timerPeriodMs, 100, 'a block: back to 100 ms');
    const after = sampler.sample();
    assert.ok(!(value(after, 'nodejs.eventloop.delay.max') > 0.02), 'the block is counted once');
  });

  it('a loop woken 20 times a second stays at 100 ms (never 1 s)', async function () {
    if (!hasLoopCount()) this.skip();
    sampler = createEventLoopSampler({ mode: 'timer' });
    busy = setInterval(() => {}, 50);
    const periods = new Set();
    const until = Date.now() + 3500;
    while (Date.now() < until) {
      await sleep(100);
      periods.add(sampler.timerPeriodMs);
    }
    assert.ok(periods.has(100) && !periods.has(1000), `periods seen: ${[...periods].join(', ')}`);
  });

  it('coarseMs equal to the resolution keeps the 10 ms timer (the old behaviour)', async () => {
    sampler = createEventLoopSampler({ mode: 'timer', coarseMs: 10 });
    await sleep(1200);
    assert.equal(sampler.timerPeriodMs, 10);
    const points = sampler.sample();
    const h = points.find((p) => p.name === 'nodejs.eventloop.delay').histogram;
    assert.ok(h.count >= 60 && h.count <= 125, `${h.count} firings in 1.2 s`);
  });

  describe('on Node\'s native monitor (fine), and the intervals its resets would lose', () => {
    const above = (points, bound) => {
      const h = points.find((p) => p.name === 'nodejs.eventloop.delay').histogram;
      return h.counts.slice(h.bounds.indexOf(bound) + 1).reduce((a, c) => a + c, 0);
    };

    it('a block right after a sample, in the same tick, is read in full (the monitor\'s reset forgets its last firing)', async () => {
      sampler = createEventLoopSampler({ mode: 'timer', coarseMs: 10 }); // always fine
      await sleep(100);
      for (let i = 0; i < 3; i++) {
        await sleep(15 + 7 * i);
        const before = above(sampler.sample(), 0.1);
        blockFor(200);
        await sleep(40);
        const points = sampler.sample();
        const max = value(points, 'nodejs.eventloop.delay.max');
        // Ground truth: a 200 ms block; a 10 ms timer reads it less up to one period.
        assert.ok(max >= 0.19 && max < 0.3, `round ${i}: max ${max} s`);
        assert.equal(above(points, 0.1) - before, 1, `round ${i}: one sample above 100 ms`);
      }
    });

    it('a block in an app timer due just before the sampler\'s is read once, in one of the two intervals', async () => {
      sampler = createEventLoopSampler({ mode: 'timer', coarseMs: 10 });
      await sleep(100);
      for (let i = 0; i < 3; i++) {
        sampler.sample();
        await sleep(13 + 3 * i);
        const maxes = [];
        await new Promise((resolve) => {
          // Same due time, the app's first: Node runs both in one pass of its timer list, and the
          // monitor's firing that would measure the block comes after the sample.
          setTimeout(() => blockFor(200), 5);
          setTimeout(() => {
            const points = sampler.sample();
            maxes.push(value(points, 'nodejs.eventloop.delay.max') || 0);
            resolve();
          }, 5);
        });
        await sleep(40);
        const points = sampler.sample();
        maxes.push(value(points, 'nodejs.eventloop.delay.max') || 0);
        assert.equal(above(points, 0.1), i + 1, `round ${i}: the cumulative histogram has each block once`);
        const seen = maxes.filter((m) => m >= 0.19);
        assert.equal(seen.length, 1, `round ${i}: interval maxima ${maxes}`);
        assert.ok(seen[0] < 0.3, `round ${i}: interval maxima ${maxes}`);
      }
    });

    it('an interval with coarse and fine samples reads both (the union of the JavaScript and native values)', async function () {
      if (!hasLoopCount()) this.skip();
      sampler = createEventLoopSampler({ mode: 'timer' });
      let until = Date.now() + 5000;
      while (sampler.timerPeriodMs !== 100 && Date.now() < until) await sleep(100);
      assert.equal(sampler.timerPeriodMs, 100);
      const before = above(sampler.sample(), 0.05);
      await sleep(30);
      blockFor(120); // coarse: a JavaScript timer's reading
      await sleep(120);
      busy = setInterval(() => {}, 2);
      until = Date.now() + 3000;
      while (sampler.timerPeriodMs !== 10 && Date.now() < until) await sleep(20);
      assert.equal(sampler.timerPeriodMs, 10, 'a busy loop turns it fine');
      await sleep(50);
      blockFor(80); // fine: the native monitor's
      await sleep(50);
      const points = sampler.sample();
      // Ground truth: a 120 ms and an 80 ms block; each reads its length less up to one period.
      assert.ok(value(points, 'nodejs.eventloop.delay.max') >= 0.11 && value(points, 'nodejs.eventloop.delay.max') < 0.2, `max ${value(points, 'nodejs.eventloop.delay.max')}`);
      assert.equal(above(points, 0.05) - before, 2, 'both blocks, once each');
      const p99 = value(points, 'nodejs.eventloop.delay.p99');
      assert.ok(p99 >= 0 && p99 <= value(points, 'nodejs.eventloop.delay.max'));
    });
  });
});
