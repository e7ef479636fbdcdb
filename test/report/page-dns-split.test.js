'use strict';

// The page's DNS split (lib/report/page/page.html) while pool threads wait for a CPU (the
// snapshot's signal poolThreadsStarved), in a real browser: a lookup's time after its DNS slot is
// not called resolving then (as in lib/report/text.js), and is when they do not.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { useBrowser } = require('../helpers/browser');
const { staticReport } = require('../../lib/report/page');
const { createFindingsEngine } = require('../../lib/findings/engine');

// The figures: 0.9 pool threads computing and 2.8 waiting for a CPU at 5 ms per wait.
const STARVED = Object.freeze({ available: true, threads: 4, computing: 0.9, runnable: 2.8, schedulings: 560, meanWaitSeconds: 0.005 });
const LOCALHOST = Object.freeze({
  name: 'localhost', lookups: 4, errors: 0, seconds: 0.192, queueWaitSeconds: 0, resolveSeconds: 0.192, queuedLookups: 0, maxSeconds: 0.05,
  duplicates: 0, maxInFlight: 1, timeouts: 0, inFlight: 0, totalLookups: 4, callers: [], recentLookups: 4, p50: 0.048, p99: 0.05, stddev: 0.001, mean: 0.048, tail: null,
});

describe('the page\'s DNS split while pool threads wait for a CPU (lib/report/page)', function () {
  this.timeout(60000);
  const browser = useBrowser();
  let dir;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-page-'));
  });
  after(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function splitTitle(busy) {
    const details = { dns: { inFlight: 0, hosts: [LOCALHOST] }, threadpool: { size: 4, dnsSlots: 2, pending: {}, probes: {}, busy } };
    // The signals as the agent's engine makes them of the interval (the page judges nothing).
    const engine = createFindingsEngine({ intervalMs: 1000, startTime: 0 });
    for (const time of [1000, 2000]) engine.evaluate({ time, points: [], details });
    const snapshot = { time: Date.now(), pid: 1, points: [], findings: [], details, signals: engine.signals() };
    const file = path.join(dir, `r${Math.random().toString(36).slice(2)}.html`);
    fs.writeFileSync(file, staticReport({ snapshot }));
    const { page, errors } = await browser.open();
    await page.goto(`file://${file}`);
    await page.locator('#status', { hasText: 'report of' }).waitFor();
    const title = await page.locator('tr[data-host="localhost"] .split').getAttribute('title');
    assert.deepEqual(errors, [], 'no console errors');
    return title;
  }

  it('says "on a pool thread" with the share of pool threads\' time spent waiting for a CPU (2.8 of 3.7: 76 %)', async () => {
    assert.equal(await splitTitle(STARVED), 'mean 0 ms waiting for a DNS slot + 48 ms on a pool thread, of which pool threads spent 76 % waiting for a CPU');
  });

  it('says "resolving" when pool threads did not wait (0.01 threads) or the kernel does not tell (Node 20)', async () => {
    assert.match(await splitTitle({ ...STARVED, runnable: 0.01 }), /\+ 48 ms resolving$/);
    assert.match(await splitTitle({ available: false, reason: 'libuv 1.46.0 (Node 20) does not name its pool threads' }), /\+ 48 ms resolving$/);
  });
});
