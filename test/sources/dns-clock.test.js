'use strict';

// What the DNS sampler records for each lookup, against durations the test sets: its clock
// (process.hrtime.bigint(), read once by sampler.js and slots.js when they load) replaced by one
// the test moves, and a fake dns module whose callbacks the test makes. Every figure is then
// known exactly: each lookup's duration, its wait for a DNS slot (2 slots: UV_THREADPOOL_SIZE=4),
// the interval's sums, the histograms and the recent window's percentiles and tail. This covers
// the sampler's own path through the slot model (a slot taken and given back while nothing is
// queued, and a queued lookup getting its slot at a callback).

const assert = require('node:assert/strict');

const SAMPLER = require.resolve('../../lib/sources/dns/sampler');
const SLOTS = require.resolve('../../lib/sources/dns/slots');
const NAMES = require.resolve('../../lib/sources/dns/names');

// Runs fn with the sampler's modules loaded with the test's clock: process.hrtime.bigint()
// replaced while fn runs (sampler.js reads it when it loads, slots.js when the first lookup loads
// it), those modules (and names.js, which holds slots.js's record class) taken out of the cache
// before and after, so that other tests load their own.
async function withClock(clock, fn) {
  const real = process.hrtime.bigint;
  const drop = () => {
    delete require.cache[SAMPLER];
    delete require.cache[SLOTS];
    delete require.cache[NAMES];
  };
  drop();
  process.hrtime.bigint = () => clock.now;
  try {
    return await fn(require(SAMPLER).createDnsSampler);
  } finally {
    process.hrtime.bigint = real;
    drop();
  }
}

function fakeDns() {
  const calls = [];
  const dns = {
    lookup(hostname, options, callback) {
      calls.push({ hostname, cb: typeof options === 'function' ? options : callback });
    },
    promises: {
      lookup(hostname) {
        return new Promise((resolve, reject) => calls.push({ hostname, cb: (err, address) => (err ? reject(err) : resolve({ address, family: 4 })) }));
      },
    },
  };
  return { dns, calls };
}

const ms = (n) => BigInt(n) * 1000000n;

describe('sources/dns: the figures of lookups whose durations the test sets (its own clock)', () => {
  it('each lookup timed from its call to its callback, a queued one split into its wait for a slot and its resolving', () => {
    const clock = { now: ms(5000) };
    return withClock(clock, async (createDnsSampler) => {
    const { dns, calls } = fakeDns();
    const sampler = createDnsSampler({ dns, env: { UV_THREADPOOL_SIZE: '4' } });
    try {
      const at = (t) => (clock.now = ms(5000 + t));
      // t=0: a, b and c at once: a and b take the 2 slots, c waits.
      dns.lookup('clock.test', () => {});
      const b = dns.promises.lookup('clock.test');
      dns.lookup('clock.test', { family: 4 }, () => {});
      assert.equal(sampler.inFlight, 3);
      at(100);
      calls[0].cb(null, '127.0.0.1', 4); // a: 100 ms; its slot goes to c, which waited 100 ms
      at(250);
      calls[1].cb(null, '127.0.0.1', 4); // b: 250 ms
      await b;
      at(400);
      calls[2].cb(null, '127.0.0.1', 4); // c: 400 ms, of it 100 waiting and 300 resolving
      // d starts with both slots free and fails after 50 ms.
      dns.lookup('clock.test', () => {});
      at(450);
      calls[3].cb(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }));
      assert.equal(sampler.inFlight, 0);

      const h = sampler.details().hosts.find((x) => x.name === 'clock.test');
      const durations = [0.1, 0.25, 0.4, 0.05];
      const waits = [0, 0, 0.1, 0];
      assert.equal(h.lookups, 4);
      assert.equal(h.errors, 1);
      assert.equal(h.seconds, durations.reduce((s, x) => s + x, 0));
      assert.equal(h.queueWaitSeconds, waits.reduce((s, x) => s + x, 0));
      assert.equal(h.resolveSeconds, durations.reduce((s, x, i) => s + (x - waits[i]), 0));
      assert.equal(h.queuedLookups, 1);
      assert.equal(h.maxSeconds, 0.4);
      assert.equal(h.maxInFlight, 3);
      assert.equal(h.duplicates, 2);
      assert.equal(h.recentLookups, 4);
      assert.equal(h.p50, 0.1);
      assert.equal(h.p99, 0.4);
      assert.equal(h.mean, durations.reduce((s, x) => s + x, 0) / 4);
      assert.deepEqual(h.tail, { lookups: 1, meanSeconds: 0.4, queueWaitSeconds: 0.1, resolveSeconds: 0.4 - 0.1 });

      const points = sampler.sample();
      const point = (name, attrs) => points.find((p) => p.name === name && Object.entries(attrs).every(([k, v]) => p.attributes[k] === v));
      const ok = point('dns.lookup.duration', { 'dns.question.name': 'clock.test', 'error.type': '' }).histogram;
      assert.equal(ok.count, 3);
      assert.equal(ok.sum, 0.1 + 0.25 + 0.4);
      const failed = point('dns.lookup.duration', { 'dns.question.name': 'clock.test', 'error.type': 'ENOTFOUND' }).histogram;
      assert.equal(failed.count, 1);
      assert.equal(failed.sum, 0.05);
      const wait = point('nodejs.dns.lookup.queue_wait', { 'dns.question.name': 'clock.test' }).histogram;
      assert.equal(wait.count, 4);
      assert.equal(wait.sum, 0.1);
      assert.equal(wait.counts[0], 3, 'three lookups waited 0');
    } finally {
      sampler.close();
    }
    });
  });

  it('a lookup queued behind slots that free one at a time waits until its own slot frees, then the model is empty again', () => {
    const clock = { now: ms(1000) };
    return withClock(clock, (createDnsSampler) => {
    const { dns, calls } = fakeDns();
    const sampler = createDnsSampler({ dns, env: { UV_THREADPOOL_SIZE: '4' } });
    try {
      const at = (t) => (clock.now = ms(1000 + t));
      for (let i = 0; i < 5; i++) dns.lookup(`q${i}.test`, () => {});
      // q0 and q1 hold the slots; q2, q3 and q4 wait.
      at(30);
      calls[1].cb(null, '127.0.0.1', 4); // q1 ends: q2 gets a slot (waited 30)
      at(70);
      calls[0].cb(null, '127.0.0.1', 4); // q0 ends: q3 gets a slot (waited 70)
      at(100);
      calls[2].cb(null, '127.0.0.1', 4); // q2 ends (100, waited 30): q4 gets a slot (waited 100)
      at(160);
      calls[3].cb(null, '127.0.0.1', 4);
      calls[4].cb(null, '127.0.0.1', 4);
      // Nothing queued now: the next lookup takes a slot at once.
      at(200);
      dns.lookup('q5.test', () => {});
      at(210);
      calls[5].cb(null, '127.0.0.1', 4);
      const got = Object.fromEntries(sampler.details().hosts.map((h) => [h.name, [h.seconds, h.queueWaitSeconds]]));
      assert.deepEqual(got, {
        'q0.test': [0.07, 0],
        'q1.test': [0.03, 0],
        'q2.test': [0.1, 0.03],
        'q3.test': [0.16, 0.07],
        'q4.test': [0.16, 0.1],
        'q5.test': [0.01, 0],
      });
      assert.equal(sampler.inFlight, 0);
    } finally {
      sampler.close();
    }
    });
  });
});
