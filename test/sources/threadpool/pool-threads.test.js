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

  it('each reading the rates since the one before, over the threads seen both times, through many readings and a thread that goes', () => {
    let ns = 0n;
    const pool = createPoolThreads({ root, hrtime: () => ns });
    addThread(root, 2, 'libuv-worker', 0);
    addThread(root, 3, 'libuv-worker', 0);
    const stat = (tid, runNs, waitNs, slices) => fs.writeFileSync(path.join(root, String(tid), 'schedstat'), `${runNs} ${waitNs} ${slices}\n`);
    stat(2, 0, 0, 0);
    stat(3, 0, 0, 0);
    assert.match(pool.read().reason, /first reading/);
    // Thread 2 computes 0.25 s a second, thread 3 0.5 s and waits 0.1 s over 10 arrivals: the
    // readings must each see one second's differences, whichever Map held the reading before.
    for (let s = 1; s <= 5; s++) {
      ns += 1000000000n;
      stat(2, s * 250000000, 0, s * 4);
      stat(3, s * 500000000, s * 100000000, s * 10);
      const r = pool.read();
      assert.equal(r.threads, 2, `reading ${s}`);
      assert.equal(r.computing, 0.75, `reading ${s}`);
      assert.equal(r.runnable, 0.1, `reading ${s}`);
      assert.equal(r.schedulings, 14, `reading ${s}`);
    }
    // Thread 3 gone: the directory's test copy is listed at each reading (not /proc), so the next
    // reading has thread 2 alone, over its own second.
    fs.rmSync(path.join(root, '3'), { recursive: true });
    ns += 2000000000n;
    stat(2, 5 * 250000000 + 1000000000, 0, 5 * 4 + 2);
    const alone = pool.read();
    assert.equal(alone.threads, 1);
    assert.equal(alone.computing, 0.5);
    assert.equal(alone.runnable, 0);
    assert.equal(alone.schedulings, 1);
    // A thread that comes with CPU time already: not counted in the reading that first sees it.
    addThread(root, 5, 'libuv-worker', 9000000000);
    ns += 1000000000n;
    const joined = pool.read();
    assert.equal(joined.threads, 2);
    assert.equal(joined.computing, 0);
    ns += 1000000000n;
    stat(5, 9500000000, 0, 1);
    assert.equal(pool.read().computing, 0.5);
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
