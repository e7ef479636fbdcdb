'use strict';

// lib/sources/threadpool/pool-threads.js: before the pool starts, the task directory is listed again
// only when its link count (2 + a subdirectory a thread) moved; a thread that comes is still found.

const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { runNode } = require('../../helpers/child');
const { createPoolThreads } = require('../../../lib/sources/threadpool/pool-threads');

const REPO = path.resolve(__dirname, '../../..');

/** A thread's directory as /proc/<pid>/task/<tid> has it: its name and its schedstat (ns). */
function addThread(root, tid, name, runNs = 0) {
  fs.mkdirSync(path.join(root, String(tid)));
  fs.writeFileSync(path.join(root, String(tid), 'comm'), `${name}\n`);
  fs.writeFileSync(path.join(root, String(tid), 'schedstat'), `${runNs} 0 1\n`);
}

// A reading that found no pool thread (its reason names the libuv where threads are not named).
function assertNone(r) {
  assert.equal(r.available, false, JSON.stringify(r));
  assert.doesNotMatch(r.reason, /first reading/);
}

describe('sources/threadpool/pool-threads: the task directory before the pool starts', () => {
  let root;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-tasks-'));
    addThread(root, 1, 'node');
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('finds pool threads that come after readings with none, and reads their CPU time from then on', () => {
    let ns = 0n;
    const pool = createPoolThreads({ root, hrtime: () => ns });
    assertNone(pool.read());
    assertNone(pool.read());
    addThread(root, 2, 'libuv-worker', 0);
    addThread(root, 3, 'libuv-worker', 0);
    assert.match(pool.read().reason, /first reading/);
    ns += 1000000000n;
    fs.writeFileSync(path.join(root, '2', 'schedstat'), '500000000 0 3\n');
    const r = pool.read();
    assert.equal(r.available, true);
    assert.equal(r.threads, 2);
    assert.equal(r.computing, 0.5);
    pool.close();
  });

  it('does not list the directory while its link count stays (an entry that is not a directory is not seen)', () => {
    const pool = createPoolThreads({ root, hrtime: () => 0n });
    assertNone(pool.read());
    // A symbolic link adds an entry but no link: the reading does not list the directory again.
    // (In /proc/<pid>/task every entry is a thread's directory.)
    fs.mkdirSync(path.join(root, '..', `${path.basename(root)}-elsewhere`), { recursive: true });
    const elsewhere = path.join(root, '..', `${path.basename(root)}-elsewhere`);
    addThread(elsewhere, 9, 'libuv-worker');
    fs.symlinkSync(path.join(elsewhere, '9'), path.join(root, '9'));
    try {
      assertNone(pool.read());
      // A thread's directory moves the count: listed again, and both are found.
      addThread(root, 4, 'libuv-worker');
      assert.match(pool.read().reason, /first reading/);
    } finally {
      pool.close();
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('in a real process (libuv 1.50+): none before the first pool job, every pool thread after it', async function () {
    if (Number(process.versions.uv.split('.')[1]) < 50) this.skip(); // libuv before 1.50 does not name its threads
    this.timeout(20000);
    const script = `
      const { createPoolThreads } = require(${JSON.stringify(path.join(REPO, 'lib/sources/threadpool/pool-threads.js'))});
      const pool = createPoolThreads();
      const before = [pool.read(), pool.read()];
      require('fs').access('/', () => {
        const first = pool.read();
        const second = pool.read();
        console.log(JSON.stringify({ before, first, second }));
        pool.close();
      });`;
    const r = await runNode(['-e', script], { env: { UV_THREADPOOL_SIZE: '3' } });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim().split('\n').pop());
    assert.deepEqual(out.before.map((b) => b.workers), [0, 0], r.stdout);
    assert.match(out.first.reason, /first reading/, r.stdout);
    assert.equal(out.second.available, true, r.stdout);
    assert.equal(out.second.threads, 3, r.stdout);
  });
});
