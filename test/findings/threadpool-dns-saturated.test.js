'use strict';
// threadpool-dns-saturated (lib/findings/rules/threadpool-dns-saturated.js) on samples whose
// figures the test sets: lookups queued for the 2 DNS slots of a pool of 4 in every interval,
// and the work probe's wait for a free thread, which says whether other work held the pool.

const assert = require('node:assert/strict');
const { createFindingsEngine } = require('../../lib/findings/engine');

const INTERVAL_MS = 1000;
const DNS_WAIT_S = 0.3; // each interval's dns probe waited this long for a DNS slot

// Interval i (from 0) of a pool of 4 with 20 lookups pending and 18 queued; the work probe
// waited workWaitS for a free thread.
function sample(i, workWaitS) {
  const dnsWait = { count: i + 1, sum: (i + 1) * DNS_WAIT_S, bounds: [], counts: [] };
  const point = (name, value, attributes = {}) => ({ name, attributes, value });
  return {
    points: [
      point('nodejs.uv.threadpool.size', 4),
      point('nodejs.uv.threadpool.dns_slots', 2),
      point('nodejs.uv.threadpool.pending', 20, { 'nodejs.uv.threadpool.kind': 'dns' }),
      point('nodejs.uv.threadpool.queued', 18, { 'nodejs.uv.threadpool.kind': 'dns' }),
      { name: 'nodejs.uv.threadpool.queue_wait', attributes: { 'nodejs.uv.threadpool.queue': 'dns' }, histogram: dnsWait },
      point('nodejs.eventloop.delay.max', 0.005),
    ],
    details: {
      dns: { inFlight: 20, hosts: [] },
      threadpool: {
        size: 4,
        dnsSlots: 2,
        probes: { work: { maxWaitSeconds: workWaitS, inFlightSeconds: 0 }, dns: { maxWaitSeconds: DNS_WAIT_S, inFlightSeconds: 0 } },
      },
    },
  };
}

// The findings after 12 intervals whose work probe waited 1 ms, except those in held (80 ms).
function findings(held) {
  const engine = createFindingsEngine({ checkQuiet: true, intervalMs: INTERVAL_MS, startTime: 0 });
  let out = [];
  for (let i = 0; i < 12; i++) out = engine.evaluate({ ...sample(i, held.includes(i) ? 0.08 : 0.001), time: (i + 1) * INTERVAL_MS });
  return Object.fromEntries(out.map((f) => [f.id, f]));
}

describe('threadpool-dns-saturated on figures the test sets', () => {
  it('fires on lookups queued for the DNS slots while the rest of the pool was free', () => {
    const f = findings([])['threadpool-dns-saturated'];
    assert.ok(f);
    assert.equal(f.evidence.peakPendingLookups, 20);
    assert.equal(f.evidence.peakQueuedLookups, 18);
  });

  it('still fires when one interval\'s work probe waited 80 ms for a thread (a host short of CPU for a moment): that interval and its neighbours are left out, not the window', () => {
    const byId = findings([5]);
    const f = byId['threadpool-dns-saturated'];
    assert.ok(f, `findings: ${Object.keys(byId)}`);
    assert.equal(byId['threadpool-saturated'], undefined);
    // Every interval queued; 4, 5 and 6 are left out.
    assert.equal(f.evidence.windowIntervals, 12);
    assert.equal(f.evidence.intervals, 9);
  });

  it('makes no DNS claim when other work held the pool (threadpool-saturated: 3 intervals in a row)', () => {
    const byId = findings([5, 6, 7]);
    assert.equal(byId['threadpool-dns-saturated'], undefined, byId['threadpool-dns-saturated'] && byId['threadpool-dns-saturated'].summary);
  });

  it('makes no DNS claim from intervals that each neighbour one whose work probe waited', () => {
    // Queued in every interval; all but the first are held or next to a held one: one interval
    // counts, fewer than the 2 the rule needs.
    const byId = findings([2, 5, 8, 11]);
    assert.equal(byId['threadpool-dns-saturated'], undefined, byId['threadpool-dns-saturated'] && byId['threadpool-dns-saturated'].summary);
    assert.equal(byId['threadpool-saturated'], undefined);
  });
});
