'use strict';

const assert = require('node:assert/strict');
const { ROOT, runNode, lastJson } = require('../helpers/child');

const MiB = 1048576;

async function run(oldSpaceMb) {
  const r = await runNode([`--max-old-space-size=${oldSpaceMb}`, '--expose-gc', '-e', `
    const uvscope = require(${JSON.stringify(ROOT)});
    const { findPoint } = require(${JSON.stringify(ROOT + '/lib/snapshot/snapshot')});
    const agent = uvscope.start({ exporters: 'none', intervalMs: 3600000 });
    const before = agent.sampleNow();
    const majors = (s) => { const p = findPoint(s.points, 'v8js.gc.duration', { 'v8js.gc.type': 'major' }); return p ? p.histogram.count : 0; };
    for (let i = 0; i < 5; i++) global.gc();
    setTimeout(() => {
      const after = agent.sampleNow();
      console.log(JSON.stringify({ limit: findPoint(after.points, 'v8js.memory.heap.limit').value, majors: majors(after) - majors(before) }));
      uvscope.stop();
    }, 100);
  `]);
  assert.equal(r.code, 0, r.stderr);
  return lastJson(r.stdout);
}

describe('samplers/memory', () => {
  it('reports the heap limit the app was started with and every forced major GC', async () => {
    const small = await run(256);
    const big = await run(512);
    // --max-old-space-size sets the old generation; V8 adds a young generation whose size
    // differs between Node majors, so the ground truth is the difference the flag makes.
    assert.equal(big.limit - small.limit, 256 * MiB, `${small.limit / MiB} and ${big.limit / MiB} MiB`);
    assert.ok(small.limit >= 256 * MiB);
    assert.equal(small.majors, 5, 'one major GC per global.gc()');
    assert.equal(big.majors, 5);
  });

  it('reports the container limit at every sample, reading it at most every 10 s; none without a limit', () => {
    const { createMemorySampler } = require('../../lib/sources/memory');
    const constrained = (p) => (p.find((x) => x.name === 'nodejs.memory.constrained') || {}).value;
    let reads = 0;
    const limited = createMemorySampler({ gc: false, constrainedMemory: () => (reads++, 256 * MiB) });
    const free = createMemorySampler({ gc: false, constrainedMemory: () => 2 ** 64 });
    try {
      for (let i = 0; i < 3; i++) {
        assert.equal(constrained(limited.sample()), 256 * MiB, `sample ${i}`);
        assert.equal(constrained(free.sample()), undefined, 'no limit: no point');
      }
      assert.equal(reads, 1, 'three samples within 10 s read the cgroup once');
    } finally {
      limited.close();
      free.close();
    }
  });

  it('reports the heap limit at every sample, read with the container\'s: a limit that moved is reported within 10 s', () => {
    const { createMemorySampler } = require('../../lib/sources/memory');
    const value = (p, name) => (p.find((x) => x.name === name) || {}).value;
    let heap = 512 * MiB;
    let cgroup = 1024 * MiB;
    let now = 0;
    const s = createMemorySampler({ gc: false, heapLimit: () => heap, constrainedMemory: () => cgroup, now: () => now });
    try {
      assert.equal(value(s.sample(), 'v8js.memory.heap.limit'), 512 * MiB);
      heap = 768 * MiB; // raised, as a near-heap-limit callback does
      cgroup = 2048 * MiB;
      now = 9999;
      const within = s.sample();
      assert.deepEqual([value(within, 'v8js.memory.heap.limit'), value(within, 'nodejs.memory.constrained')], [512 * MiB, 1024 * MiB]);
      now = 10000;
      const after = s.sample();
      assert.deepEqual([value(after, 'v8js.memory.heap.limit'), value(after, 'nodejs.memory.constrained')], [768 * MiB, 2048 * MiB]);
    } finally {
      s.close();
    }
  });
});
