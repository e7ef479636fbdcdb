'use strict';

// summarizePool (lib/findings/pool.js): a summary's pending and tracer parts are either the shared
// objects of an idle interval or the summary's own, made once and reused as the summary is.

const assert = require('node:assert/strict');
const { summarizePool } = require('../../lib/findings/pool');

const pendingPoints = (counts) => Object.entries(counts).map(([kind, value]) => ({ name: 'nodejs.uv.threadpool.pending', attributes: { 'nodejs.uv.threadpool.kind': kind }, value }));
const sample = (counts, tracer) => ({ time: 0, points: pendingPoints(counts), details: { threadpool: { size: 4, dnsSlots: 2, tracer } } });
const IDLE = { mode: 'auto', armed: false, armedSince: null, jobs: [] };
const ARMED = { mode: 'auto', armed: true, armedSince: 1000, jobs: [{ kind: 'crypto', type: 'PBKDF2REQUEST', pending: 3, completed: 1 }] };

describe('findings/pool: summarizePool\'s pending and tracer parts', () => {
  it('an idle interval shares one object; a busy one writes the summary\'s own, the same one each time the summary is reused', () => {
    const busy = summarizePool(sample({ dns: 1, fs: 2 }, ARMED), null, 1);
    const ownPending = busy.pending;
    const ownTracer = busy.tracer;
    assert.deepEqual({ ...ownPending }, { dns: 1, fs: 2, crypto: 0, zlib: 0, other: 0 });
    assert.equal(ownTracer.armed, true);
    assert.equal(ownTracer.jobs, ARMED.jobs);

    const idle = summarizePool(sample({ dns: 0, fs: 0 }, IDLE), null, 1, busy);
    assert.equal(idle, busy, 'the summary is reused');
    const other = summarizePool(sample({ dns: 0, fs: 0 }, IDLE), null, 1);
    assert.equal(idle.pending, other.pending, 'idle: the shared pending');
    assert.equal(idle.tracer, other.tracer, 'idle: the shared tracer');
    assert.ok(Object.isFrozen(idle.pending) && Object.isFrozen(idle.tracer));
    assert.deepEqual({ ...idle.pending }, { dns: 0, fs: 0, crypto: 0, zlib: 0, other: 0 });

    const again = summarizePool(sample({ crypto: 4 }, { ...ARMED, armedSince: 2000 }), null, 1, idle);
    assert.equal(again.pending, ownPending, 'busy again: its own pending, reused');
    assert.equal(again.tracer, ownTracer, 'busy again: its own tracer, reused');
    assert.deepEqual({ ...again.pending }, { dns: 0, fs: 0, crypto: 4, zlib: 0, other: 0 });
    assert.equal(again.tracer.armedSince, 2000);
    // The shared ones are as they were.
    assert.deepEqual({ ...other.pending }, { dns: 0, fs: 0, crypto: 0, zlib: 0, other: 0 });
    assert.deepEqual({ ...other.tracer }, { mode: 'auto', armed: false, armedSince: null, jobs: [] });
  });
});
