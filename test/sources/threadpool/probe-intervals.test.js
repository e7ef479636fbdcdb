'use strict';

// One observation of each probe per interval at most (lib/sources/threadpool/sampler.js): OTLP
// records a probe's wait as the difference of two snapshots' histograms. A probe still in flight
// at a sample ends in the next interval, so no probe is launched after that sample, even when the
// one in flight ends before the launch would run (a loaded machine: the probe's thread runs
// between the sample and the loop's next check phase).

const assert = require('node:assert/strict');
const { createThreadpoolSampler } = require('../../../lib/sources/threadpool/sampler');

const immediate = () => new Promise((resolve) => setImmediate(resolve));

describe('sources/threadpool: a probe in flight at a sample', () => {
  it('ends in the next interval with no other probe of its queue: one observation each, and the sample after launches the next', async () => {
    // Jobs the test ends: the dns probe's getnameinfo and the work probe's job.
    const held = { dns: [], work: [] };
    const sampler = createThreadpoolSampler({
      env: { UV_THREADPOOL_SIZE: '4' },
      lookupService: (address, port, callback) => held.dns.push(() => callback(null, 'localhost', '0')),
      workJob: (done) => held.work.push(() => done(null)),
      poolThreads: { read: () => ({ available: false, reason: 'test' }) },
    });
    // Lookups pending: both probes are due after every sample.
    const tick = { resources: new Map([['GetAddrInfoReqWrap', 3]]) };
    const counts = (points) => Object.fromEntries(['dns', 'work'].map((queue) => [queue,
      points.find((p) => p.name === 'nodejs.uv.threadpool.queue_wait' && p.attributes['nodejs.uv.threadpool.queue'] === queue).histogram.count]));
    try {
      sampler.sample(tick);
      await immediate();
      assert.deepEqual([held.dns.length, held.work.length], [1, 1], 'launched after the first sample');
      const before = counts(sampler.sample(tick)); // both in flight at this sample
      held.dns[0]();
      held.work[0]();
      await immediate();
      assert.deepEqual([held.dns.length, held.work.length], [1, 1], 'none launched after a sample that saw one in flight');
      const after = counts(sampler.sample(tick));
      assert.deepEqual(after, { dns: before.dns + 1, work: before.work + 1 });
      await immediate();
      assert.deepEqual([held.dns.length, held.work.length], [2, 2], 'the sample after launches the next');
    } finally {
      sampler.close();
    }
  });
});
