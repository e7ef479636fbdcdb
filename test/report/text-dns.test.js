'use strict';

// The text report's DNS line divides an interval's summed durations by the lookups that ended in
// it, not by those that started: a lookup can start in one interval and end in the next. A fake
// dns module lets the test decide when each lookup ends; the durations are the test's own delays.

const assert = require('node:assert/strict');
const { createDnsSampler } = require('../../lib/sources/dns/sampler');
const { formatReport } = require('../../lib/report/text');

const DELAY_MS = 40;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function fakeDns() {
  const calls = [];
  const dns = {
    lookup(hostname, options, callback) {
      calls.push(typeof options === 'function' ? options : callback);
    },
  };
  return { dns, calls };
}

// The report's line for one host, from the sampler's details of the interval so far.
function hostLine(sampler, name) {
  const details = { dns: sampler.details() };
  const text = formatReport({ time: Date.now(), points: [], findings: [], details });
  return text.split('\n').find((l) => l.startsWith(`  ${name}: `));
}

describe('report/text: the DNS split over the lookups that ended in the interval', () => {
  it('a lookup in flight across a sample: "none ended" in the interval it started, its own time in the next', async () => {
    const { dns, calls } = fakeDns();
    const sampler = createDnsSampler({ dns });
    try {
      // A first lookup, ended: the host has a recent lookup, so the report lists it.
      dns.lookup('slow.test', () => {});
      calls[0](null, '127.0.0.9', 4);
      sampler.endInterval();

      // Started, not ended, at the sample: no duration to divide.
      dns.lookup('slow.test', () => {});
      const started = sampler.details().hosts.find((h) => h.name === 'slow.test');
      assert.equal(started.lookups, 1);
      assert.equal(started.endedLookups, 0);
      assert.equal(hostLine(sampler, 'slow.test').split(';')[0], '  slow.test: 1 lookups, none ended this interval');
      sampler.endInterval();

      // Ended in the next interval, where none started: its own duration, not "none".
      await sleep(DELAY_MS);
      calls[1](null, '127.0.0.9', 4);
      const ended = sampler.details().hosts.find((h) => h.name === 'slow.test');
      assert.equal(ended.lookups, 0);
      assert.equal(ended.endedLookups, 1);
      const m = /^ {2}slow\.test: 0 lookups, 1 ended, (\d+) ms = 0\.0 ms waiting for a DNS slot \+ (\d+) ms resolving;/.exec(hostLine(sampler, 'slow.test'));
      assert.ok(m, hostLine(sampler, 'slow.test'));
      assert.ok(Number(m[1]) >= DELAY_MS - 1, `the mean is the one lookup's ${m[1]} ms (it waited ${DELAY_MS} ms)`);
      assert.equal(m[1], m[2]);
      sampler.endInterval();

      // Two started, one ended: the mean is that one's duration, not half of it.
      dns.lookup('slow.test', () => {});
      dns.lookup('slow.test', () => {});
      await sleep(DELAY_MS);
      calls[2](null, '127.0.0.9', 4);
      const half = /^ {2}slow\.test: 2 lookups, 1 ended, (\d+) ms = /.exec(hostLine(sampler, 'slow.test'));
      assert.ok(half, hostLine(sampler, 'slow.test'));
      assert.ok(Number(half[1]) >= DELAY_MS - 1, `the mean is the ended lookup's ${half[1]} ms`);
      calls[3](null, '127.0.0.9', 4);
      // Both ended: divided by both, no "ended" count.
      assert.match(hostLine(sampler, 'slow.test'), /^ {2}slow\.test: 2 lookups, \d+ ms = /);
    } finally {
      sampler.close();
    }
  });
});
