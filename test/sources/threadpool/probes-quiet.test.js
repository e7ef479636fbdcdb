'use strict';

// The probes run only when the pool may make them wait (lib/sources/threadpool/sampler.js,
// probesDue): no dns probe for an idle pool, no work probe either where busy pool threads can be
// read (Node 22+; on Node 20 it runs at every sample), and a pool wait of 20 ms is still seen at
// the next sample.

const assert = require('node:assert/strict');
const path = require('path');
const { FIXTURES, lastJson, runNode } = require('../../helpers/child');

describe('sources/threadpool: probes on a quiet pool and on a full one', function () {
  this.timeout(30000);

  it('an idle pool gets no dns probe (and no work probe where busy threads are read); a pool full of crypto work (not listed as pending) shows its 20 ms+ wait', async () => {
    const r = await runNode([path.join(FIXTURES, 'probe-quiet-app.js')], { env: { UV_THREADPOOL_SIZE: '2' } });
    assert.equal(r.code, 0, r.stderr);
    const out = lastJson(r.stdout);
    // After a sample whose probes waited under 5 ms, an idle pool gets no dns probe, and no work
    // probe where busy threads are read (every sample where not).
    const quiet = out.idle.filter((s) => s.wait < 0.005);
    assert.ok(quiet.length >= 3, `probes kept waiting 5 ms+ on an idle pool: ${JSON.stringify(out.idle)}`);
    for (const s of quiet) {
      assert.equal(s.dns, 0, JSON.stringify(out.idle));
      assert.equal(s.work, out.busyReadable ? 0 : 1, JSON.stringify(out.idle));
    }
    assert.equal(out.busyReadable, Number(process.versions.uv.split('.')[1]) >= 50, 'libuv 1.50+ names its pool threads');
    // Ground truth: the app's own jobs, submitted as the probe is, waited 20 ms or more.
    assert.ok(out.twinMinWait >= 0.02, `the pool was not full: ${JSON.stringify(out)}`);
    assert.ok(out.seen, `no probe wait of 20 ms+ in 8 s: ${JSON.stringify(out)}`);
    assert.ok(out.seen.afterMs <= 1500, `seen ${out.seen.afterMs} ms after the pool filled: ${JSON.stringify(out)}`);
    // At most the jobs ahead of it: two running and two queued pbkdf2 of the app's (each no longer
    // than the longest wait of the app's own jobs).
    assert.ok(out.seen.waitSeconds <= 2 * out.twinMaxWait + 0.1, JSON.stringify(out));
  });
});
