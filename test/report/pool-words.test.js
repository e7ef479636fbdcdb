'use strict';

// How the report and the page word a lookup's time after its DNS slot (lib/report/pool-words.js),
// from the interval's signals as the findings engine made them from figures the test sets; the
// same with real pbkdf2 jobs against a DNS server's clock is in test/sources/dns-split.test.js.

const assert = require('node:assert/strict');
const { otherPoolWork, poolThreadWords, TYPE_NAMES, pageSource } = require('../../lib/report/pool-words');
const { createFindingsEngine } = require('../../lib/findings/engine');

const pool = (over = {}) => ({ size: 4, dnsSlots: 2, pending: { dns: 0, fs: 0 }, probes: { work: { maxWaitSeconds: 0, inFlightSeconds: 0 } }, tracer: null, ...over });
const waited = (s, inFlight = 0) => ({ work: { maxWaitSeconds: s, inFlightSeconds: inFlight } });

// The signals of a second interval whose threadpool details are tp and loop delay max delayMax
// (the first is startup), as the engine hands them to the snapshot.
function signalsOf(tp, delayMax = 0, busy = undefined) {
  const engine = createFindingsEngine({ intervalMs: 1000, startTime: 0 });
  const details = { threadpool: busy ? { ...tp, busy } : tp };
  const points = [{ name: 'nodejs.eventloop.delay.max', attributes: {}, value: delayMax }];
  engine.evaluate({ time: 1000, points, details: { threadpool: pool() } });
  engine.evaluate({ time: 2000, points, details });
  return engine.signals();
}

const words = (tp, delayMax = 0) => otherPoolWork(tp, signalsOf(tp, delayMax), TYPE_NAMES);

describe('report/pool-words: how a lookup\'s time on its thread is worded, from the signals', () => {
  it('nothing without other work: an idle pool, lookups pending, a probe that waited under 50 ms, no details', () => {
    assert.equal(words(pool()), '');
    assert.equal(words(pool({ pending: { dns: 9, fs: 0 } })), '');
    assert.equal(words(pool({ probes: waited(0.049) })), '');
    assert.equal(otherPoolWork(undefined, null, TYPE_NAMES), '');
  });

  it('the pool held (the signal poolHeld: the work probe waited 50 ms or more beyond the loop\'s delay)', () => {
    assert.equal(signalsOf(pool({ probes: waited(0.2) }), 0.01).poolHeld, true);
    assert.equal(words(pool({ probes: waited(0.2) }), 0.01), ', or waiting for a pool thread held by other work (a job waited up to 190 ms for a thread)');
    assert.equal(signalsOf(pool({ probes: waited(0.2) }), 0.16).poolHeld, false);
    assert.equal(words(pool({ probes: waited(0.2) }), 0.16), '', 'the loop\'s own delay explains it');
    assert.equal(words(pool({ probes: waited(0, 0.3) })), ', or waiting for a pool thread held by other work (a job has waited 300 ms for a thread)');
  });

  it('not from the probe where DNS can hold every thread (a pool of 1: 1 DNS slot)', () => {
    assert.equal(signalsOf(pool({ size: 1, dnsSlots: 1, probes: waited(0.5) })).poolHeld, true);
    assert.equal(words(pool({ size: 1, dnsSlots: 1, probes: waited(0.5) })), '');
  });

  it('more non-DNS jobs pending at the sample than threads outside the DNS slots (2 of 4)', () => {
    assert.equal(words(pool({ pending: { dns: 0, fs: 2 } })), '');
    assert.equal(words(pool({ pending: { dns: 0, fs: 2, crypto: 1, zlib: 0, other: 0 } })), ', or waiting for a pool thread held by other work (2 fs, 1 crypto pending at the sample)');
  });

  it('names the work the tracer saw in the interval, not DNS and not job types it did not see', () => {
    const jobs = [
      { kind: 'dns', type: 'GETADDRINFOREQWRAP', pending: 2, completed: 5 },
      { kind: 'crypto', type: 'PBKDF2REQUEST', pending: 4, completed: 0 },
      { kind: 'fs', type: 'FSREQCALLBACK', pending: 0, completed: 3 },
      { kind: 'zlib', type: 'ZLIB', pending: 0, completed: 0 },
    ];
    assert.equal(words(pool({ probes: waited(0.1), tracer: { mode: 'on', armed: true, jobs } })),
      ', or waiting for a pool thread held by other work (crypto (pbkdf2), fs (callbacks): a job waited up to 100 ms for a thread)');
  });

  it('pool threads waiting for a CPU: worded while the signal poolThreadsStarved holds (0.5+ threads at 1+ ms per wait), with their share', () => {
    const busy = (runnable, meanWaitSeconds) => ({ available: true, threads: 4, computing: 1, runnable, schedulings: 10, meanWaitSeconds });
    const starved = signalsOf(pool(), 0, busy(1, 0.002));
    assert.equal(starved.poolThreadsStarved, true);
    assert.equal(poolThreadWords(starved), 'on a pool thread, of which pool threads spent 50 % waiting for a CPU');
    for (const [r, w] of [[0.4, 0.002], [1, 0.0009]]) {
      const s = signalsOf(pool(), 0, busy(r, w));
      assert.equal(s.poolThreadsStarved, false, `${r} threads, ${w} s per wait`);
      assert.equal(poolThreadWords(s), null);
    }
    assert.equal(poolThreadWords(null), null, 'a snapshot without signals');
  });

  it('the wait that counts is the one beyond the loop: a probe\'s wait while the loop was idle (heldSeconds) holds, a blocked loop\'s does not (lib/core/pool-held.js)', () => {
    // 120 ms waited, all of it with the loop idle, though the loop was once 150 ms late: held.
    const idle = pool({ probes: { work: { maxWaitSeconds: 0.12, inFlightSeconds: 0, heldSeconds: 0.12 } } });
    assert.equal(signalsOf(idle, 0.15).poolHeld, true);
    assert.equal(words(idle, 0.15), ', or waiting for a pool thread held by other work (a job waited up to 120 ms for a thread)');
    // 300 ms waited, the loop never idle (a 300 ms block): not held.
    const blocked = pool({ probes: { work: { maxWaitSeconds: 0.3, inFlightSeconds: 0, heldSeconds: 0 } } });
    assert.equal(signalsOf(blocked, 0.3).poolHeld, false);
    assert.equal(words(blocked, 0.3), '');
  });

  it('addon work the tracer named by its package (its resource name said nothing) is worded by the package', () => {
    const jobs = [{ kind: 'other', type: 'sharp (generic)', package: 'sharp', pending: 8, completed: 3 }];
    assert.equal(words(pool({ probes: waited(0.1), tracer: { mode: 'auto', armed: true, jobs } })),
      ', or waiting for a pool thread held by other work (sharp (addon work): a job waited up to 100 ms for a thread)');
  });

  it('the page\'s source is the same functions with the same names', () => {
    const page = new Function(`return ${pageSource()}`)();
    const tp = pool({ probes: waited(0.1), tracer: { mode: 'on', armed: true, jobs: [{ kind: 'crypto', type: 'PBKDF2REQUEST', pending: 4, completed: 0 }] } });
    const signals = signalsOf(tp);
    assert.notEqual(otherPoolWork(tp, signals, TYPE_NAMES), '');
    assert.equal(page.otherPoolWork(tp, signals), otherPoolWork(tp, signals, TYPE_NAMES));
    const starved = { ...signals, poolThreadsStarved: true, poolCpuWaitShare: 0.25 };
    assert.equal(page.poolThreadWords(starved), poolThreadWords(starved));
  });
});
