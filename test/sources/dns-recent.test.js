'use strict';

const assert = require('node:assert/strict');
const { RecentLookups } = require('../../lib/sources/dns/recent');

// What stats() must give, from the lookups the test made: sorted, nearest-rank percentiles.
function reference(lookups, since) {
  const kept = lookups.filter((l) => l.time >= since);
  const sorted = kept.map((l) => l.seconds).sort((a, b) => a - b);
  const n = sorted.length;
  const at = (q) => sorted[Math.min(n - 1, Math.ceil(q * n) - 1)];
  const mean = sorted.reduce((a, x) => a + x, 0) / n;
  const p99 = at(0.99);
  const tail = kept.filter((l) => l.seconds >= p99);
  const tailTotal = tail.reduce((a, l) => a + l.seconds, 0);
  const tailWait = tail.reduce((a, l) => a + l.waited, 0);
  return {
    recentLookups: n,
    p50: at(0.5),
    p99,
    mean,
    stddev: Math.sqrt(sorted.reduce((a, x) => a + (x - mean) ** 2, 0) / n),
    tail: { lookups: tail.length, meanSeconds: tailTotal / tail.length, queueWaitSeconds: tailWait / tail.length, resolveSeconds: (tailTotal - tailWait) / tail.length },
  };
}

const close = (a, b) => Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(b));

describe('samplers/dns: recent lookups (percentiles over the window)', () => {
  it('gives the nearest-rank p50 and p99, mean, standard deviation and tail of the lookups in the window, with ties and any count', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    for (let round = 0; round < 300; round++) {
      const count = 1 + Math.floor(random() * 2500);
      const recent = new RecentLookups(2048, 60000);
      const lookups = [];
      // Few distinct values in some rounds: ties at the percentiles.
      const distinct = round % 3 === 0 ? 1 + Math.floor(random() * 5) : 0;
      for (let i = 0; i < count; i++) {
        const seconds = distinct ? (1 + Math.floor(random() * distinct)) / 1000 : random() * 0.1;
        const l = { time: 1000 + i * 50, seconds, waited: seconds * random() };
        lookups.push(l);
        recent.add(l.time, l.seconds, l.waited);
      }
      // The buffer keeps the last 2,048; the window starts somewhere in them.
      const keptFrom = Math.max(0, count - 2048);
      const since = lookups[keptFrom + Math.floor(random() * (count - keptFrom))].time;
      const out = {};
      recent.stats(since, out);
      const want = reference(lookups.slice(keptFrom), since);
      assert.equal(out.recentLookups, want.recentLookups, `round ${round}`);
      assert.equal(out.p50, want.p50, `round ${round}: p50`);
      assert.equal(out.p99, want.p99, `round ${round}: p99`);
      assert.ok(close(out.mean, want.mean), `round ${round}: mean ${out.mean} vs ${want.mean}`);
      assert.ok(close(out.stddev, want.stddev), `round ${round}: stddev ${out.stddev} vs ${want.stddev}`);
      assert.equal(out.tail.lookups, want.tail.lookups, `round ${round}: tail`);
      for (const k of ['meanSeconds', 'queueWaitSeconds', 'resolveSeconds']) assert.ok(close(out.tail[k], want.tail[k]), `round ${round}: tail ${k}`);
    }
  });

  it('gives nulls for an empty window', () => {
    const recent = new RecentLookups(2048, 60000);
    recent.add(1000, 0.01, 0);
    const out = {};
    recent.stats(2000, out);
    assert.deepEqual(out, { recentLookups: 0, p50: null, p99: null, stddev: null, tail: null, mean: null });
  });
  it('keeps the same doubles in 12-byte cells as in doubles, and turns to doubles at the first lookup that does not fit', () => {
    // The DNS sampler's figures: whole nanoseconds (process.hrtime() differences) over 1e9, times
    // in whole milliseconds. Each sequence through a compact buffer and a wide one, stats() after
    // every few lookups at windows that start anywhere: every figure the same double.
    let seed = 11;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const nsSeconds = (max) => Math.floor(random() * max * 1e9) / 1e9;
    const misfits = [
      (l) => ({ ...l, seconds: 4.3 + nsSeconds(1) }), // 4.29 s or longer: past a cell
      (l) => ({ ...l, waited: l.seconds * 0.3 }), // not whole nanoseconds
      (l) => ({ ...l, time: l.time - 2 ** 31 }), // a clock set back 25 days
      (l) => ({ ...l, time: l.time + 0.5 }), // not whole milliseconds
    ];
    let widened = 0;
    for (let round = 0; round < 200; round++) {
      const max = round % 2 ? 2048 : 64;
      const compact = new RecentLookups(max, 60000);
      const wide = new RecentLookups(max, 60000, { wide: true });
      const count = 1 + Math.floor(random() * 3000);
      // not the first lookup: the base is taken from it
      const misfitAt = round % 4 === 0 && count > 1 ? 1 + Math.floor(random() * (count - 1)) : -1;
      let time = 1.79e12 + Math.floor(random() * 1e9);
      for (let i = 0; i < count; i++) {
        time += Math.floor(random() * 100);
        const seconds = nsSeconds(round % 3 === 0 ? 0.01 : 2);
        let l = { time, seconds, waited: random() < 0.5 ? 0 : Math.floor(random() * seconds * 1e9) / 1e9 };
        if (i === misfitAt) l = misfits[(round / 4) % misfits.length](l);
        compact.add(l.time, l.seconds, l.waited);
        wide.add(l.time, l.seconds, l.waited);
        if (i % 97 === 0 || i === count - 1) {
          const since = time - Math.floor(random() * 70000);
          const a = {};
          const b = {};
          compact.stats(since, a);
          wide.stats(since, b);
          assert.deepEqual(a, b, `round ${round}, lookup ${i}`);
        }
      }
      assert.equal(compact.compact, misfitAt === -1, `round ${round}: compact`);
      if (misfitAt !== -1) widened++;
      assert.equal(wide.compact, false);
    }
    assert.ok(widened >= 45, `${widened}`);
  });
});
