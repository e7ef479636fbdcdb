'use strict';

// Timer mode's lateness values (lib/sources/eventloop-lateness.js): the values recorded in
// JavaScript (LatenessValues) and their union with the native monitor's (LatenessUnion).

const assert = require('node:assert/strict');

describe('samplers/eventloop: the union of native and recorded lateness (LatenessUnion)', () => {
  const { createHistogram } = require('perf_hooks');
  const { LatenessUnion, LatenessValues } = require('../../lib/sources/eventloop-lateness');
  const { _internal: { addToBuckets } } = require('../../lib/sources/eventloop');
  const { Histogram } = require('../../lib/core/histogram');
  const { EVENTLOOP_BUCKETS } = require('../../lib/snapshot/catalog');
  const P = 10e6;

  // Ground truth: lateness values (ns) the test puts in each part; "native" records period + lateness.
  function build(nativeLate, recordedLate, zeros) {
    const native = createHistogram();
    for (const ns of nativeLate) native.record(P + ns);
    const recorded = new LatenessValues();
    const u = new LatenessUnion(/** @type {any} */ (native), P, recorded);
    for (const ns of recordedLate) u.record(ns);
    u.zeros += zeros;
    const all = [...nativeLate, ...recordedLate, ...new Array(zeros).fill(0)].sort((a, b) => a - b);
    return { u, all };
  }
  // HDR keeps 3 significant digits: a native value (period + lateness) is within 0.1% of the
  // period and lateness. No value lies that close to a bucket bound.
  const near = (got, want, msg) => assert.ok(Math.abs(got - want) <= 0.001 * (P + want) + 1, `${msg}: ${got} vs ${want}`);

  for (const [label, nativeLate, recordedLate, zeros] of [
    ['native only', [0, 50e3, 1.2e6, 3e6, 200e6, 40e3, 40e3], [], 0],
    ['recorded only', [], [2e6, 95e6, 300e3], 27],
    ['one recorded value (a reset\'s interval) among native ones', [10e3, 20e3, 30e3, 4e6, 60e6, 70e3], [190e6], 0],
    ['both, interleaved, with zeros', [0, 4.6e6, 4.6e6, 7e6, 12e6, 400e6, 1.3e6], [3e6, 6e6, 6e6, 150e6, 2.6e9], 9],
  ]) {
    it(`count, min, max, mean, percentiles and buckets of the union: ${label}`, () => {
      const { u, all } = build(nativeLate, recordedLate, zeros);
      const n = all.length;
      assert.equal(u.count, n);
      near(u.min, all[0], 'min');
      near(u.max, all[n - 1], 'max');
      const mean = all.reduce((a, b) => a + b, 0) / n;
      assert.ok(Math.abs(u.mean - mean) <= 0.001 * (P + mean), `mean ${u.mean} vs ${mean}`);
      for (const p of [1, 10, 25, 50, 75, 90, 99, 100]) {
        const k = Math.max(1, Math.floor((p / 100) * n + 0.5));
        near(u.percentile(p), all[k - 1], `p${p}`);
      }
      for (let k = 1; k <= n; k++) near(u.percentile((100 * k) / n), all[k - 1], `rank ${k}`);
      const h = new Histogram(EVENTLOOP_BUCKETS);
      addToBuckets(h, u, n, 0);
      const want = new Histogram(EVENTLOOP_BUCKETS);
      for (const ns of all) want.observe(ns / 1e9);
      assert.deepEqual(h.counts, want.counts);
      u.reset();
      assert.equal(u.count, 0);
    });
  }
});

describe('samplers/eventloop: lateness values recorded in JavaScript (LatenessValues)', () => {
  const { LatenessValues } = require('../../lib/sources/eventloop-lateness');

  // Ground truth: the values the test records; kept ones read back exactly, spilled ones (past
  // `kept`, into a perf_hooks histogram) within its 3 significant digits.
  function check(v, values, tolerance) {
    const all = [...values].sort((a, b) => a - b);
    const n = all.length;
    const near = (got, want, msg) => assert.ok(Math.abs(got - want) <= tolerance * want, `${msg}: ${got} vs ${want}`);
    assert.equal(v.count, n);
    near(v.min, all[0], 'min');
    near(v.max, all[n - 1], 'max');
    near(v.mean, all.reduce((a, b) => a + b, 0) / n, 'mean');
    for (let k = 1; k <= n; k++) near(v.percentile((100 * k) / n), all[k - 1], `rank ${k}`);
    for (const p of [1, 50, 90, 99, 100]) near(v.percentile(p), all[Math.max(1, Math.floor((p / 100) * n + 0.5)) - 1], `p${p}`);
  }
  const values = [95e6, 2e6, 300e3, 2.6e9, 6e6, 6e6, 1, 150e6, 12345];

  it('keeps the values as they are, in any order, until reset', () => {
    const v = new LatenessValues();
    assert.equal(v.count, 0);
    assert.ok(Number.isNaN(v.mean));
    for (const ns of values.slice(0, 4)) v.record(ns);
    check(v, values.slice(0, 4), 0);
    for (const ns of values.slice(4)) v.record(ns);
    check(v, values, 0);
    v.reset();
    assert.equal(v.count, 0);
    v.record(7e6);
    check(v, [7e6], 0);
  });

  it('moves past `kept` values into a native histogram, and keeps them as they are again after reset', () => {
    const v = new LatenessValues(4);
    for (const ns of values) v.record(ns);
    check(v, values, 0.001);
    v.reset();
    assert.equal(v.count, 0);
    for (const ns of values.slice(0, 3)) v.record(ns);
    check(v, values.slice(0, 3), 0);
  });
});
