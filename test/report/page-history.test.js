'use strict';

// The page's history (lib/report/page createHistory): once full, its oldest entry is overwritten
// with the new figures rather than a new one kept; what /history.json serves must be exactly what
// a new summary of each of the last snapshots gives.

const assert = require('node:assert/strict');
const { createHistory, summarize } = require('../../lib/report/page');

// A snapshot with the points summarize() reads; kinds and queues as given.
function snapshot(time, { kinds = ['dns', 'fs'], queues = ['dns', 'work'], pid } = {}) {
  const points = [];
  for (const [i, kind] of kinds.entries()) {
    points.push({ name: 'nodejs.uv.threadpool.pending', attributes: { 'nodejs.uv.threadpool.kind': kind }, value: time % 7 + i });
    points.push({ name: 'nodejs.uv.threadpool.queued', attributes: { 'nodejs.uv.threadpool.kind': kind }, value: time % 5 + i });
  }
  for (const queue of queues) {
    points.push({ name: 'nodejs.uv.threadpool.queue_wait', attributes: { 'nodejs.uv.threadpool.queue': queue }, histogram: { sum: time / 1000, count: time % 11 } });
    points.push({ name: 'uvscope.probe.in_flight', attributes: { 'nodejs.uv.threadpool.queue': queue }, value: time % 2 });
  }
  points.push({ name: 'nodejs.eventloop.delay.max', attributes: {}, value: time / 1e5 });
  if (time % 3) points.push({ name: 'nodejs.eventloop.delay.p99', attributes: {}, value: time / 1e6 });
  points.push({ name: 'nodejs.eventloop.utilization', attributes: {}, value: (time % 100) / 100 });
  return { time, pid, points };
}

describe('the page history (lib/report/page)', () => {
  it('once full, serves the last entries as new summaries of them would be, keys in the same order', () => {
    const history = createHistory({ max: 4 });
    const added = [];
    // The kinds and queues change from time to time (keys appear and go), a p99 is missing in
    // some: an entry reused for a snapshot of another shape must still serialize as a new one.
    for (let i = 0; i < 40; i++) {
      const shape = i % 9 === 0 ? { kinds: ['dns', 'fs', 'crypto'], queues: ['dns'] } : i % 13 === 0 ? { kinds: ['fs', 'dns'], pid: 7 } : {};
      const s = snapshot(1000 + i * 100, shape);
      added.push(s);
      history.add(s);
      const expected = added.slice(-4).map((x) => JSON.stringify(summarize(x)));
      assert.deepEqual(history.list().map((e) => JSON.stringify(e)), expected, `after ${i + 1} snapshots`);
      // The same objects too (an undefined figure a key of its own, as summarize() gives it).
      assert.deepStrictEqual(history.list(), added.slice(-4).map((x) => summarize(x)), `after ${i + 1} snapshots`);
    }
  });

  it('keeps what it was given past its first rows, with many shapes, odd values and more than its max', () => {
    // 50 entries (its typed rows grow from 16 to 50), kinds in 24 orders (more shapes than it
    // keeps: those entries are kept as they are), a pid, a string and a null where numbers were.
    const history = createHistory({ max: 50 });
    const added = [];
    const kinds = ['dns', 'fs', 'crypto', 'zlib'];
    for (let i = 0; i < 130; i++) {
      const order = [...kinds].sort((a, b) => ((a.charCodeAt(0) * (i % 24 + 1)) % 7) - ((b.charCodeAt(0) * (i % 24 + 1)) % 7) || (a < b ? -1 : 1));
      const s = snapshot(5000 + i * 10, { kinds: i % 5 === 0 ? kinds : order, queues: i % 4 === 0 ? ['work'] : ['dns', 'work'], pid: i % 3 ? 42 : undefined });
      if (i % 7 === 0) s.points.push({ name: 'nodejs.eventloop.utilization', attributes: {}, value: i % 14 === 0 ? 'n/a' : null });
      if (i % 11 === 0) s.points.push({ name: 'nodejs.uv.threadpool.pending', attributes: { 'nodejs.uv.threadpool.kind': 'other' }, value: -0 });
      added.push(s);
      history.add(s);
      assert.deepStrictEqual(history.list(), added.slice(-50).map((x) => summarize(x)), `after ${i + 1} snapshots`);
    }
  });
});
