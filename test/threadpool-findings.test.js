'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const { REGISTER, FIXTURES, runNode, freePort } = require('./helpers/child');

/**
 * Run one scenario of test/fixtures/threadpool-app.js with the agent preloaded; returns the
 * fixture's own ground truth, the agent's snapshot and its findings by id.
 */
async function scenario(name, env = {}) {
  const port = await freePort();
  const r = await runNode(['--require', REGISTER, path.join(FIXTURES, 'threadpool-app.js')], {
    env: { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '200', FIXTURE_SCENARIO: name, ...env },
    timeoutMs: 40000,
  });
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n').filter((l) => l.startsWith('{'));
  const { truth } = JSON.parse(lines[lines.length - 2]);
  const snapshot = JSON.parse(lines[lines.length - 1]);
  return { truth, snapshot, byId: Object.fromEntries(snapshot.findings.map((f) => [f.id, f])) };
}

describe('threadpool findings: who holds the pool (lib/threadpool-findings.js)', function () {
  this.timeout(60000);

  describe('the issue 9 reproduction: 8 keep-alive clients hashing with pbkdf2 (~65 ms each) on a pool of 4, a lookup of localhost every 100 ms', function () {
    let run;
    before(async () => {
      run = await scenario('pbkdf2', { UVSCOPE_TRACER: 'off' });
    });

    it('raises threadpool-saturated, and neither threadpool-dns-saturated nor dns-no-cache', () => {
      const ids = Object.keys(run.byId);
      assert.ok(run.byId['threadpool-saturated'], `findings: ${ids}`);
      assert.ok(!run.byId['threadpool-dns-saturated'], `DNS blamed: ${run.byId['threadpool-dns-saturated'] && run.byId['threadpool-dns-saturated'].summary}`);
      assert.ok(!run.byId['dns-no-cache'], `dns-no-cache: ${run.byId['dns-no-cache'] && run.byId['dns-no-cache'].summary}`);
    });

    it('with the tracer off, says the pool is held by work Node does not list, and what DNS waits behind it', () => {
      const f = run.byId['threadpool-saturated'];
      assert.equal(f.evidence.holder.kind, 'unlisted');
      assert.match(f.summary, /held by work Node does not list \(async crypto/);
      assert.match(f.summary, /Not DNS: lookups can hold at most 2 of the 4 threads/);
      assert.equal(f.evidence.threadpoolSize, 4);
      assert.equal(f.evidence.dnsSlots, 2);
      // 8 hashes of ~65 ms for 4 threads: a job waits at least one hash for a thread.
      assert.ok(f.evidence.maxPoolWaitSeconds > 0.05, `pool wait ${f.evidence.maxPoolWaitSeconds}`);
      assert.ok(f.evidence.intervals >= 3);
      // What DNS waits behind it, against the fixture's own clock: it timed every lookup.
      const dns = f.evidence.waitingBehind.dns;
      assert.ok(run.truth.lookupMaxSeconds > 0.1, `the fixture's slowest lookup ${run.truth.lookupMaxSeconds}`);
      assert.ok(Math.abs(dns.maxLookupSeconds - run.truth.lookupMaxSeconds) < 0.02 + 0.1 * run.truth.lookupMaxSeconds,
        `slowest lookup: agent ${dns.maxLookupSeconds}, fixture ${run.truth.lookupMaxSeconds}`);
      assert.ok(dns.lookups <= run.truth.lookups && dns.lookups >= run.truth.lookups - 2, `lookups: agent ${dns.lookups}, fixture ${run.truth.lookups}`);
      assert.ok(dns.peakPending >= 2, `peak pending lookups ${dns.peakPending}`);
      assert.match(f.advice[0], /UVSCOPE_TRACER=on/);
    });
  });

  it('the pool held by fs: 4 FIFO reads block the 4 threads; the holder is fs, not DNS', async () => {
    const { byId } = await scenario('fsHeld', { UVSCOPE_TRACER: 'off' });
    const f = byId['threadpool-saturated'];
    assert.ok(f, `findings: ${Object.keys(byId)}`);
    assert.ok(!byId['threadpool-dns-saturated'], 'DNS blamed');
    assert.equal(f.evidence.holder.kind, 'fs');
    // The test holds 4 reads outstanding at all times.
    assert.equal(f.evidence.waitingBehind.fs.peakPending, 4);
    assert.match(f.summary, /held by fs work \(up to 4 fs requests pending\)/);
    assert.match(f.advice[0], /up to 4 fs requests were pending for 4 threads/);
  });

  describe('healthy twins: neither threadpool finding', function () {
    for (const [name, what] of [
      ['cpu', 'a busy but healthy CPU-bound server (2 ms handlers, the loop busy all the time)'],
      ['occasional', 'occasional pbkdf2 (one login at a time, every 300 ms) that never fills the pool'],
      ['fs', 'an fs-heavy but healthy app (8 clients each reading a 256 KiB file per request)'],
    ]) {
      it(`${name}: ${what}`, async () => {
        const { byId, truth } = await scenario(name);
        assert.ok(truth.requests >= 3, `requests ${truth.requests}`);
        assert.ok(!byId['threadpool-saturated'], byId['threadpool-saturated'] && byId['threadpool-saturated'].summary);
        assert.ok(!byId['threadpool-dns-saturated'], byId['threadpool-dns-saturated'] && byId['threadpool-dns-saturated'].summary);
      });
    }
  });
});
