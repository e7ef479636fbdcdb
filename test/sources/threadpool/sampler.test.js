'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const { threadpoolSize } = require('../../../lib/core/libuv');
const { withDnsServer } = require('../../helpers/dns-server');
const { runInNamespace, resolvConf } = require('../../helpers/namespace');
const { REGISTER, FIXTURES, freePort, lastJson, runNode, parsePrometheus, sampleValue } = require('../../helpers/child');

const conf = resolvConf({ nameserver: '127.0.0.2' });

async function inNamespace(args, env) {
  const r = await runInNamespace({ resolvConf: conf, args, env, timeoutMs: 30000 });
  assert.equal(r.code, 0, r.stderr);
  return lastJson(r.stdout);
}

describe('sources/threadpool/sampler', function () {
  describe('threadpoolSize() parses UV_THREADPOOL_SIZE as libuv does', () => {
    const cases = [[undefined, 4], ['4', 4], ['64', 64], ['1024', 1024], ['2000', 1024], ['0', 1], ['abc', 1], ['', 1], [' 8', 8], ['8x', 8], ['-1', 1024], ['+16', 16], ['99999999999', 1024]];
    for (const [raw, want] of cases) {
      it(`${JSON.stringify(raw)} -> ${want}`, () => assert.equal(threadpoolSize(raw), want));
    }
  });

  describe('against a DNS server that answers in a known time', function () {
    withDnsServer({
      address: '127.0.0.2',
      names: { '*.second.test': { a: '127.0.0.1', delayMs: 1000 }, '*.third.test': { a: '127.0.0.1', delayMs: 300 }, '*.rounds.test': { a: '127.0.0.1', delayMs: 270 } },
    });

    it('20 concurrent 1 s lookups with pool 4: pending 20 and queued 18 half a second in; a stuck probe is shown as such', async () => {
      const port = await freePort();
      const out = await inNamespace([ '--require', REGISTER, path.join(FIXTURES, 'dns-app.js')], {
        UVSCOPE_PROMETHEUS_PORT: String(port),
        UVSCOPE_INTERVAL_MS: '500',
        // samples at ~500, 1000, 1500 ms; scrapes read the 500 ms and the 1500 ms sample
        FIXTURE_PLAN: JSON.stringify({ lookups: Array.from({ length: 20 }, () => ({ via: 'lookup', name: 'backlog.second.test' })), scrapeAtMs: [750, 1750], exit: true }),
      });
      const [half, later] = out.metrics.map(parsePrometheus);
      assert.equal(sampleValue(half, 'nodejs_uv_threadpool_size'), 4);
      assert.equal(sampleValue(half, 'nodejs_uv_threadpool_dns_slots'), 2);
      assert.equal(sampleValue(half, 'uvscope_probe_in_flight', { queue: 'dns' }), 0);
      assert.equal(sampleValue(half, 'nodejs_uv_threadpool_pending', { kind: 'dns' }), 20);
      assert.equal(sampleValue(half, 'nodejs_uv_threadpool_queued', { kind: 'dns' }), 18);
      assert.equal(sampleValue(half, 'nodejs_uv_requests_active', { type: 'GetAddrInfoReqWrap' }), 20);
      // At 1.5 s two lookups are done, two run, 16 wait, and the probe sent at 0.5 s waits behind them.
      const probe = sampleValue(later, 'uvscope_probe_in_flight', { queue: 'dns' });
      assert.equal(probe, 1);
      assert.equal(sampleValue(later, 'nodejs_uv_threadpool_pending', { kind: 'dns' }) - probe, 18);
      assert.equal(sampleValue(later, 'nodejs_uv_threadpool_queued', { kind: 'dns' }) - probe, 16);
    });

    it('the dns queue probe waits exactly as long as the backlog ahead of it; the work probe does not see DNS queueing', async () => {
      const out = await inNamespace([path.join(FIXTURES, 'queue-wait-app.js')], {
        FIXTURE_PLAN: JSON.stringify({ name: 'wait.rounds.test', count: 6 }),
      });
      // 6 lookups of 270 ms on 2 DNS slots finish at 270, 540 and 810 ms; the probe behind them
      // gets a slot at ~810 ms. Each round's end lies clear of the duration buckets' bounds (0.5 and
      // 1 s) and of a fourth round's (1.08 s): with 300 ms answers the last callback came at
      // 0.94-1.0 s at a load average of 10; with 250 ms, 3 lookups landed in (0.25, 0.5] in one
      // run on Node 22 (a second round ends at the bucket's bound).
      assert.equal(out.pendingDuring, 6);
      const done = out.results.map((r) => r.seconds).sort((a, b) => a - b);
      assert.ok(done[5] > 0.8 && done[5] < 1.0, `last lookup done at ${done[5]} s`);
      assert.equal(out.dnsWait.count, 1);
      // The probe waited from its launch, after the first sample (its second phase took 57 ms
      // with the machine's two cores busy), until the backlog cleared. done[5] is read in the
      // lookup's callback, which waits for the loop: 50 ms of slack.
      const cleared = done[5] - out.launchSeconds;
      assert.ok(Math.abs(out.dnsWait.sum - cleared) < 0.05, `probe waited ${out.dnsWait.sum} s, backlog cleared ${cleared} s after it was launched (${done[5]} s after the lookups)`);
      assert.equal(out.workWait.count, 1);
      assert.ok(out.workWait.sum < 0.05, `work probe waited ${out.workWait.sum} s with 2 free threads`);
      // Each lookup's duration includes its wait for a slot: 2 in (0.25, 0.5], 4 in (0.5, 1].
      const { bounds, counts } = out.lookup;
      assert.equal(counts[bounds.indexOf(0.5)], 2);
      assert.equal(counts[bounds.indexOf(1)], 4);
    });

    it('an app that sets UV_THREADPOOL_SIZE=8 in code gets 8 threads and 4 DNS slots, and uvscope reports them', async () => {
      const port = await freePort();
      const out = await inNamespace(['--require', REGISTER, path.join(FIXTURES, 'dns-app.js')], {
        UVSCOPE_PROMETHEUS_PORT: String(port),
        UVSCOPE_INTERVAL_MS: '100',
        FIXTURE_PLAN: JSON.stringify({ appSetsPoolSize: 8, lookups: Array.from({ length: 8 }, () => ({ via: 'lookup', name: 'pool.third.test' })), settleMs: 150 }),
      });
      const samples = parsePrometheus(out.metrics);
      assert.equal(sampleValue(samples, 'nodejs_uv_threadpool_size'), 8);
      assert.equal(sampleValue(samples, 'nodejs_uv_threadpool_dns_slots'), 4);
      // Ground truth for the slots: 8 lookups of 300 ms on 4 slots take two rounds, not four.
      const slowest = Math.max(...out.results.map((r) => r.seconds));
      assert.ok(slowest > 0.59 && slowest < 0.75, `8 lookups took ${slowest} s`);
    });
  });

  it('fs pending and queued, and the work probe waiting for blocked threads (FIFO reads the test releases)', async () => {
    const r = await runNode([path.join(FIXTURES, 'fifo-app.js')], { env: { FIXTURE_HOLD_MS: '400' } });
    assert.equal(r.code, 0, r.stderr);
    const out = lastJson(r.stdout);
    assert.equal(out.pendingFs, 6);
    assert.equal(out.queuedFs, 2);
    assert.equal(out.workWait.count, 1);
    assert.ok(out.workWait.sum > 0.38 && out.workWait.sum < out.heldMs / 1000 + 0.05, `work probe waited ${out.workWait.sum} s; threads were held ${out.heldMs} ms`);
    // Sampled again while the work probe (an fs.access of uvscope's own) waits behind the reads:
    // Node lists 7 FSReqCallback, the app's figures are its 6 reads. (queued: the dns probe, stuck
    // too, counts as pending dns, as docs/metrics.md says.)
    assert.deepEqual(out.stuck, { workInFlight: 1, pendingFs: 6, fsRequests: 6, listed: 7 });
  });

  it('the work probe is an fs.access, and a crypto.randomFill where the permission model denies reading /', async () => {
    // The app: two samples 300 ms apart, the first with fs work of the app's pending (so that the
    // probes are due where busy threads are read), then whether crypto was loaded and how many
    // work probes completed.
    const app = `
      const uvscope = require(${JSON.stringify(path.join(__dirname, '..', '..', '..'))});
      const agent = uvscope.start({ exporters: 'none', intervalMs: 3600000 });
      for (let i = 0; i < 4; i++) require('fs').stat(__filename, () => {});
      agent.sampleNow();
      setTimeout(() => {
        const w = agent.sampleNow().points.find((p) => p.name === 'nodejs.uv.threadpool.queue_wait' && p.attributes['nodejs.uv.threadpool.queue'] === 'work');
        console.log(JSON.stringify({ crypto: process.moduleLoadList.includes('NativeModule crypto'), probes: w.histogram.count }));
        uvscope.stop();
      }, 300);`;
    const fs = require('fs');
    const os = require('os');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-permission-'));
    const file = path.join(dir, 'app.js');
    fs.writeFileSync(file, app);
    const flag = Number(process.versions.node.split('.')[0]) >= 22 ? '--permission' : '--experimental-permission';
    const repo = path.join(__dirname, '..', '..', '..');
    try {
      const plain = await runNode([file]);
      assert.equal(plain.code, 0, plain.stderr);
      assert.deepEqual(lastJson(plain.stdout), { crypto: false, probes: 1 });
      const denied = await runNode([flag, `--allow-fs-read=${dir}`, `--allow-fs-read=${repo}`, file]);
      assert.equal(denied.code, 0, denied.stderr);
      assert.deepEqual(lastJson(denied.stdout), { crypto: true, probes: 1 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
