'use strict';

const assert = require('node:assert/strict');
const { CATALOG, metric, DNS_BUCKETS, QUEUE_WAIT_BUCKETS, JOB_DURATION_BUCKETS, EVENTLOOP_BUCKETS, CONNECT_BUCKETS, GC_BUCKETS } = require('../../lib/snapshot/catalog');
const { SOURCES } = require('../../lib/sources');

describe('catalog: assembled from what each source declares', () => {
  it('every source\'s metrics, in the order of lib/sources/index.js, then the agent\'s own', () => {
    const fromSources = SOURCES.flatMap((s) => s.metrics.map((m) => m.name));
    assert.deepEqual(CATALOG.map((m) => m.name), [...fromSources, 'uvscope.errors']);
    assert.equal(new Set(CATALOG.map((m) => m.name)).size, CATALOG.length, 'a name is declared once');
  });

  it('the bucket bounds it re-exports are the ones the sources declare', () => {
    assert.equal(metric('dns.lookup.duration').buckets, DNS_BUCKETS);
    assert.equal(metric('nodejs.dns.lookup.queue_wait').buckets, QUEUE_WAIT_BUCKETS);
    assert.equal(metric('nodejs.uv.threadpool.queue_wait').buckets, QUEUE_WAIT_BUCKETS);
    assert.equal(metric('nodejs.uv.threadpool.job.duration').buckets, JOB_DURATION_BUCKETS);
    assert.equal(metric('nodejs.eventloop.delay').buckets, EVENTLOOP_BUCKETS);
    assert.equal(metric('nodejs.net.connect.duration').buckets, CONNECT_BUCKETS);
    assert.equal(metric('v8js.gc.duration').buckets, GC_BUCKETS);
    for (const m of CATALOG) assert.equal(m.type === 'histogram', Array.isArray(m.buckets), `${m.name}: bounds only on histograms`);
  });

  it('each source declares its name, settings, metrics and create()', () => {
    for (const s of SOURCES) {
      assert.equal(typeof s.name, 'string');
      assert.ok(Array.isArray(s.settings) && Array.isArray(s.metrics), s.name);
      assert.equal(typeof s.create, 'function', s.name);
      assert.ok(Object.isFrozen(s), s.name);
    }
  });
});
