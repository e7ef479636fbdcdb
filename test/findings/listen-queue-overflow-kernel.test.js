'use strict';
// listen-queue-overflow against the kernel, in a network namespace of the test's own (the lab's
// acceptq driver, examples/incidents/acceptq-inside.js): where it fires on a small backlog, and
// the healthy twins where the namespace's counters stay at 0 and nothing may fire. The incident
// itself (the default backlog, 1,500 clients) is asserted in test/examples/incidents.test.js.

const assert = require('node:assert/strict');
const path = require('path');
const { netnsSupport, runInNetns } = require('../../examples/incidents/netns');

const DRIVER = path.join(__dirname, '..', '..', 'examples', 'incidents', 'acceptq-inside.js');
const drive = (scenario) => runInNetns(DRIVER, { SCENARIO: JSON.stringify(scenario) });
const ids = (r) => r.findings.map((f) => f.id);

describe('findings: listen-queue-overflow against the kernel', function () {
  this.timeout(60000);
  before(function () {
    const s = netnsSupport();
    if (s.ok) return;
    if (process.env.CI) throw new Error(`a network namespace of the test's own is required in CI (CI=${process.env.CI}): ${s.reason}`);
    console.warn(`[uvscope tests] skipping listen-queue-overflow against the kernel: ${s.reason}`);
    this.skip();
  });

  it('fires for a 1 s block while 300 clients connect on a backlog of 64, with the kernel\'s count and the queue the test filled', async () => {
    const r = await drive({ backlog: 64, blockMs: 1000, rounds: 1, clients: 300 });
    const f = r.findings.find((x) => x.id === 'listen-queue-overflow');
    assert.ok(f, ids(r).join());
    assert.equal(f.evidence.overflows, r.kernel.overflows);
    assert.ok(r.kernel.overflows >= 300 - 65, `${r.kernel.overflows}`);
    assert.deepEqual(f.evidence.port, { address: '127.0.0.1', port: r.port, peakQueue: 65, limit: 64, seenFull: true });
    assert.equal(f.evidence.cause, 'blocked');
    assert.ok(f.advice.some((a) => /backlog: 512 \}/.test(a)), f.advice.join('\n'));
  });

  it('twin: a burst that fits in the backlog (400 clients on 511) with the loop free: no drop counted, nothing fires', async () => {
    const r = await drive({ blockMs: 0, rounds: 1, clients: 400 });
    assert.equal(r.clients.answered, 400);
    assert.deepEqual(r.kernel, { overflows: 0, drops: 0 });
    assert.equal(r.listen.listeners[0].limit, 511);
    assert.ok(!ids(r).includes('listen-queue-overflow'), ids(r).join());
  });

  it('twin: a server that is simply busy (20 ms of CPU a request, 8 keep-alive clients for 2 s): nothing fires', async () => {
    const r = await drive({ busyMs: 20, rounds: 0, clients: 0, loadSeconds: 2 });
    assert.ok(r.requests > 20, `${r.requests} requests`);
    assert.deepEqual(r.kernel, { overflows: 0, drops: 0 });
    assert.ok(!ids(r).includes('listen-queue-overflow'), ids(r).join());
  });
});
