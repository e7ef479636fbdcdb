'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const { ROOT, runNode } = require('../helpers/child');
const { requireNamespace } = require('../helpers/namespace');

describe('examples/demo.js (npm start)', function () {
  before(function () {
    requireNamespace(this);
  });

  it('shows the DNS queue with a pool of 4 and none with 64', async () => {
    const r = await runNode([path.join(ROOT, 'examples', 'demo.js')], { env: { UVSCOPE_DEMO_SECONDS: '2' }, timeoutMs: 30000 });
    assert.equal(r.code, 0, r.stderr);
    const [four, sixtyFour] = r.stdout.split(/\nUV_THREADPOOL_SIZE=/).slice(1);
    const queued = (phase) => phase.split('\n').filter((l) => /^ +\d+ /.test(l)).map((l) => Number(l.trim().split(/ +/)[3]));
    assert.ok(queued(four).every((q) => q >= 20), `pool 4 queued: ${queued(four)}\n${r.stdout}`);
    assert.ok(queued(sixtyFour).every((q) => q === 0), `pool 64 queued: ${queued(sixtyFour)}\n${r.stdout}`);
  });
});
