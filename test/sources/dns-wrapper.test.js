'use strict';

// The DNS sampler's in-flight records are reused from lookup to lookup (lib/sources/dns/slots.js):
// whatever the original dns.lookup does with its callback, a lookup is counted once, only for
// itself, and the app's callback sees exactly what the original gave it. A fake dns module lets
// the test decide when, and how often, the original calls back.

const assert = require('node:assert/strict');
const { createDnsSampler } = require('../../lib/sources/dns/sampler');

function fakeDns() {
  const calls = [];
  const dns = {
    lookup(hostname, options, callback) {
      const cb = typeof options === 'function' ? options : callback;
      calls.push({ hostname, cb });
      if (hostname === 'throws.test') {
        // Registers the callback, then throws: the app gets the error, no lookup is counted.
        throw new Error('original threw');
      }
    },
  };
  return { dns, calls };
}

/**
 * Runs fn (sync or async) with a DNS sampler over `dns` (options added), closed after it whatever
 * fn does; the test returns the promise.
 * @param {object} dns @param {(sampler: any) => unknown} fn @param {object} [options]
 */
async function withSampler(dns, fn, options = {}) {
  const sampler = createDnsSampler({ dns, ...options });
  try {
    return await fn(sampler);
  } finally {
    sampler.close();
  }
}

const hostOf = (sampler, name) => sampler.details().hosts.find((h) => h.name === name);
// Lookups started (counted when they start) and lookups whose duration was recorded (the recent window).
const started = (sampler, name) => hostOf(sampler, name).lookups;
const recorded = (sampler, name) => hostOf(sampler, name).recentLookups || 0;

describe('sources/dns: the wrapper around a reused in-flight record', () => {
  it('an original that calls back twice: the app gets both calls, the lookup counts once, in flight back to 0', () => {
    const { dns, calls } = fakeDns();
    return withSampler(dns, (sampler) => {
    const seen = [];
    dns.lookup('twice.test', { family: 4 }, (err, address) => seen.push([err, address]));
    assert.equal(sampler.inFlight, 1);
    calls[0].cb(null, '127.0.0.9', 4);
    calls[0].cb(null, '127.0.0.10', 4);
    assert.deepEqual(seen, [[null, '127.0.0.9'], [null, '127.0.0.10']]);
    assert.equal(sampler.inFlight, 0);
    assert.equal(started(sampler, 'twice.test'), 1);
    assert.equal(recorded(sampler, 'twice.test'), 1);
    });
  });

  it("a late second callback is not counted for the next lookup, which took the first one's record", () => {
    const { dns, calls } = fakeDns();
    return withSampler(dns, (sampler) => {
    dns.lookup('first.test', () => {});
    calls[0].cb(null, '127.0.0.9', 4);
    dns.lookup('second.test', () => {}); // takes the record first.test gave back
    calls[0].cb(null, '127.0.0.9', 4); // first.test's original calls back again
    assert.equal(sampler.inFlight, 1, 'second.test still in flight');
    assert.equal(recorded(sampler, 'first.test'), 1);
    assert.equal(recorded(sampler, 'second.test'), 0);
    calls[1].cb(null, '127.0.0.8', 4);
    assert.equal(recorded(sampler, 'second.test'), 1);
    assert.equal(started(sampler, 'second.test'), 1);
    assert.equal(sampler.inFlight, 0);
    });
  });

  it('an original that throws, then calls back: the app gets the error and the callback; nothing counted, nothing in flight, the next lookup unaffected', () => {
    const { dns, calls } = fakeDns();
    return withSampler(dns, (sampler) => {
    let called = 0;
    assert.throws(() => dns.lookup('throws.test', () => called++), /original threw/);
    assert.equal(sampler.inFlight, 0);
    dns.lookup('next.test', () => {}); // takes the record throws.test gave back
    calls[0].cb(null, '127.0.0.9', 4); // throws.test's late callback
    assert.equal(called, 1);
    assert.equal(sampler.inFlight, 1, 'next.test still in flight');
    assert.equal(recorded(sampler, 'next.test'), 0);
    const thrown = hostOf(sampler, 'throws.test');
    assert.equal(thrown ? thrown.lookups : 0, 0);
    assert.equal(thrown ? thrown.recentLookups || 0 : 0, 0);
    calls[1].cb(null, '127.0.0.8', 4);
    assert.equal(recorded(sampler, 'next.test'), 1);
    assert.equal(sampler.inFlight, 0);
    });
  });

  it("the original gets the app's `this` and as many arguments as the app passed, the callback replaced where it was (2, 3 and 5 arguments), and its return value goes back", () => {
    const seen = [];
    const dns = {
      lookup(...args) {
        seen.push({ self: this, args });
        return `returned ${args.length}`;
      },
    };
    return withSampler(dns, (sampler) => {
    const self = { mine: true };
    const cb = () => {};
    const options = { family: 4 };
    const extra = { more: 1 };
    assert.equal(dns.lookup.call(self, 'two.test', cb), 'returned 2');
    assert.equal(dns.lookup.call(self, 'three.test', options, cb), 'returned 3');
    assert.equal(dns.lookup.call(self, 'three-cb.test', cb, undefined), 'returned 3');
    assert.equal(dns.lookup.call(self, 'five.test', options, cb, extra, 7), 'returned 5');
    assert.deepEqual(seen.map((c) => c.args.length), [2, 3, 3, 5]);
    for (const c of seen) assert.equal(c.self, self);
    // Where the app's callback was, the wrapper's (it calls the app's): everything else as passed.
    const at = [1, 2, 1, 2];
    seen.forEach((c, i) => {
      assert.equal(typeof c.args[at[i]], 'function');
      assert.notEqual(c.args[at[i]], cb, 'the callback is the wrapper\'s');
    });
    assert.equal(seen[1].args[1], options);
    assert.equal(seen[2].args[2], undefined);
    assert.deepEqual(seen[3].args.slice(0, 2), ['five.test', options]);
    assert.deepEqual(seen[3].args.slice(3), [extra, 7]);
    assert.equal(sampler.inFlight, 4);
    seen.forEach((c, i) => c.args[at[i]](null, '127.0.0.1', 4));
    assert.equal(sampler.inFlight, 0);
    assert.equal(recorded(sampler, 'five.test'), 1);
    });
  });
});

describe("sources/dns: the agent's own lookupService (the threadpool's dns probe)", () => {
  function fakeDnsWithService() {
    const { dns, calls } = fakeDns();
    const services = [];
    dns.lookupService = (address, port, callback) => {
      services.push({ address, port, cb: callback });
    };
    return { dns, calls, services };
  }

  it('holds a DNS slot in the model (an app lookup behind it waits), is counted nowhere, and passes its callback what the original gave', () => {
    const { dns, calls, services } = fakeDnsWithService();
    // One DNS slot: UV_THREADPOOL_SIZE=1 gives (1 + 1) / 2.
    return withSampler(dns, async (sampler) => {
    const seen = [];
    sampler.ownLookupService('127.0.0.1', 0, (...args) => seen.push(args));
    assert.deepEqual(services.map((s) => [s.address, s.port]), [['127.0.0.1', 0]]);
    dns.lookup('behind.test', () => {});
    await new Promise((resolve) => setTimeout(resolve, 30));
    services[0].cb(null, 'localhost', '0');
    services[0].cb(null, 'localhost', '0'); // a second call back frees no second slot
    assert.deepEqual(seen, [[null, 'localhost', '0'], [null, 'localhost', '0']]);
    calls[0].cb(null, '127.0.0.9', 4);
    const host = hostOf(sampler, 'behind.test');
    assert.equal(host.queuedLookups, 1, 'the app lookup waited for the slot the probe held');
    assert.ok(host.queueWaitSeconds >= 0.025, `waited ${host.queueWaitSeconds} s behind the 30 ms probe`);
    assert.deepEqual(sampler.details().hosts.map((h) => h.name), ['behind.test']);
    assert.equal(sampler.inFlight, 0);
    // One slot again, not two (the second call back freed none): of two app lookups now, the
    // second waits for the first.
    dns.lookup('after.test', () => {});
    dns.lookup('after.test', () => {});
    calls[1].cb(null, '127.0.0.9', 4);
    calls[2].cb(null, '127.0.0.9', 4);
    assert.equal(hostOf(sampler, 'after.test').queuedLookups, 1);
    }, { env: { UV_THREADPOOL_SIZE: '1' } });
  });

  it('an original that throws: the error reaches the caller and the slot is given back', () => {
    const { dns, calls } = fakeDnsWithService();
    dns.lookupService = () => {
      throw new Error('lookupService threw');
    };
    return withSampler(dns, (sampler) => {
    assert.throws(() => sampler.ownLookupService('127.0.0.1', 0, () => {}), /lookupService threw/);
    dns.lookup('free.test', () => {});
    calls[0].cb(null, '127.0.0.9', 4);
    assert.equal(hostOf(sampler, 'free.test').queuedLookups, 0);
    }, { env: { UV_THREADPOOL_SIZE: '1' } });
  });
});
