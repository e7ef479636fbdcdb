'use strict';

// When the report and the page say a lookup's time after its DNS slot may be a wait for a thread
// held by other work (lib/report/other-pool-work.js), on figures the test sets; the same with real
// pbkdf2 jobs against a DNS server's clock is in test/sources/dns-split.test.js.

const assert = require('node:assert/strict');
const { otherPoolWork, RULES, pageSource } = require('../../lib/report/other-pool-work');

const pool = (over = {}) => ({ size: 4, dnsSlots: 2, pending: { dns: 0, fs: 0 }, probes: { work: { maxWaitSeconds: 0, inFlightSeconds: 0 } }, tracer: null, ...over });
const waited = (s, inFlight = 0) => ({ work: { maxWaitSeconds: s, inFlightSeconds: inFlight } });

describe('report/other-pool-work: when lookups may have waited for a thread held by other work', () => {
  it('nothing without other work: an idle pool, lookups pending, a probe that waited under 50 ms, no details', () => {
    assert.equal(otherPoolWork(pool(), 0, RULES), '');
    assert.equal(otherPoolWork(pool({ pending: { dns: 9, fs: 0 } }), 0, RULES), '');
    assert.equal(otherPoolWork(pool({ probes: waited(0.049) }), 0, RULES), '');
    assert.equal(otherPoolWork(undefined, 0, RULES), '');
  });

  it('the work probe waited 50 ms or more beyond the loop\'s delay', () => {
    assert.equal(otherPoolWork(pool({ probes: waited(0.2) }), 0.01, RULES), ', or waiting for a pool thread held by other work (a job waited up to 190 ms for a thread)');
    assert.equal(otherPoolWork(pool({ probes: waited(0.2) }), 0.16, RULES), '', 'the loop\'s own delay explains it');
    assert.equal(otherPoolWork(pool({ probes: waited(0, 0.3) }), 0, RULES), ', or waiting for a pool thread held by other work (a job has waited 300 ms for a thread)');
  });

  it('not from the probe where DNS can hold every thread (a pool of 1: 1 DNS slot)', () => {
    assert.equal(otherPoolWork(pool({ size: 1, dnsSlots: 1, probes: waited(0.5) }), 0, RULES), '');
  });

  it('more non-DNS jobs pending at the sample than threads outside the DNS slots (2 of 4)', () => {
    assert.equal(otherPoolWork(pool({ pending: { dns: 0, fs: 2 } }), 0, RULES), '');
    assert.equal(otherPoolWork(pool({ pending: { dns: 0, fs: 2, crypto: 1, zlib: 0, other: 0 } }), 0, RULES), ', or waiting for a pool thread held by other work (2 fs, 1 crypto pending at the sample)');
  });

  it('names the work the tracer saw in the interval, not DNS and not job types it did not see', () => {
    const jobs = [
      { kind: 'dns', type: 'GETADDRINFOREQWRAP', pending: 2, completed: 5 },
      { kind: 'crypto', type: 'PBKDF2REQUEST', pending: 4, completed: 0 },
      { kind: 'fs', type: 'FSREQCALLBACK', pending: 0, completed: 3 },
      { kind: 'zlib', type: 'ZLIB', pending: 0, completed: 0 },
    ];
    assert.equal(otherPoolWork(pool({ probes: waited(0.1), tracer: { mode: 'on', armed: true, jobs } }), 0, RULES),
      ', or waiting for a pool thread held by other work (crypto (pbkdf2), fs (callbacks): a job waited up to 100 ms for a thread)');
  });

  it('the page\'s source is the same function with the same rules', () => {
    const page = new Function(`return ${pageSource()}`)();
    const tp = pool({ probes: waited(0.1), tracer: { mode: 'on', armed: true, jobs: [{ kind: 'crypto', type: 'PBKDF2REQUEST', pending: 4, completed: 0 }] } });
    assert.equal(page(tp, 0), otherPoolWork(tp, 0, RULES));
  });
});
