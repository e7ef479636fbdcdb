'use strict';
// listen-queue-overflow on snapshots whose figures the test sets: where it fires, the cause each
// interval with drops supports, and the twins where it stays silent. Against the kernel: test/
// findings/listen-queue-overflow-kernel.test.js and the lab's acceptq incident.

const assert = require('node:assert/strict');
const { createFindingsEngine } = require('../../lib/findings/engine');

const INTERVAL_MS = 1000;
const ID = 'listen-queue-overflow';

/**
 * One sample: the namespace's ListenOverflows (cumulative), one listener's queue and limit, the
 * loop's delay and the main thread's CPU and wait in the interval.
 */
function sample({ overflows = 0, queue = 0, limit = 511, delayMax = 0.002, cpu = 0.5, wait = 0, listen = true, listeners } = {}) {
  const points = [
    { name: 'nodejs.eventloop.delay.max', attributes: {}, value: delayMax },
    { name: 'nodejs.eventloop.delay.p99', attributes: {}, value: Math.min(delayMax, 0.002) },
  ];
  const details = { dns: { inFlight: 0, hosts: [] }, eventloop: { mainThreadCpuSeconds: cpu, mainThreadWaitSeconds: wait } };
  if (listen) {
    details.listen = {
      listeners: listeners || [{ address: '127.0.0.1', port: '8080', family: 4, backlog: null, limit, queue, maxSeen: queue }],
      omitted: 0, somaxconn: 4096, netns: { id: 'net:[4026532177]', sharedWithPid1: false },
      counters: { ListenOverflows: overflows, ListenDrops: overflows, TCPReqQFullDrop: 0, TCPReqQFullDoCookies: 0, SyncookiesSent: 0 },
      unavailable: null,
    };
  }
  return { points, details };
}

function run(samples) {
  const engine = createFindingsEngine({ checkQuiet: true, intervalMs: INTERVAL_MS, startTime: 0 });
  let findings = [];
  samples.forEach((s, i) => {
    findings = engine.evaluate({ ...s, time: (i + 1) * INTERVAL_MS });
  });
  return findings.find((f) => f.id === ID) || null;
}

// A healthy start: counters read, queue empty.
const calm = (n, overflows = 0) => Array.from({ length: n }, () => sample({ overflows }));

describe('findings: listen-queue-overflow', () => {
  it('fires when the accept queue overflowed while the loop was blocked: the drops, the port, its queue against its limit, and unblocking first', () => {
    const f = run([...calm(3, 100), sample({ overflows: 100 + 4920, queue: 512, delayMax: 2.0, cpu: 1.0 }), ...calm(2, 5020)]);
    assert.ok(f);
    assert.equal(f.evidence.overflows, 4920, 'the rise of the counter within the window, the baseline left out');
    assert.equal(f.evidence.cause, 'blocked');
    assert.deepEqual(f.evidence.byCause, { blocked: 4920, cpu: 0, burst: 0 });
    assert.deepEqual(f.evidence.port, { address: '127.0.0.1', port: '8080', peakQueue: 512, limit: 511, seenFull: true });
    assert.ok(f.evidence.maxBlockedSeconds >= 1.9, `${f.evidence.maxBlockedSeconds}`);
    assert.match(f.summary, /^The kernel dropped 4,920 connection attempts to 127\.0\.0\.1:8080 in the last 6 s because its accept queue was full \(512 waiting against its limit of 511\)/);
    assert.match(f.summary, /All came while the event loop was blocked or in the 7 s after, as the clients it dropped retried \(blocked up to 2\.00 s\)/);
    assert.match(f.advice[0], /^Unblock the event loop/);
    assert.ok(f.advice.some((a) => /backlog: 8192 \}\) with net\.core\.somaxconn at least 8192/.test(a)), f.advice.join('\n'));
    assert.ok(f.advice.some((a) => /keep-alive/.test(a)));
    // 1 s at least for each dropped attempt, over the window's 6 s
    assert.equal(f.impact.requests, 4920);
    assert.ok(Math.abs(f.impact.score - 4920 / 6) < 0.01, JSON.stringify(f.impact));
    assert.equal(f.severity, 'critical');
  });

  it('drops in the interval right after a block (retransmits meeting the queue it filled) count with the block, not as a burst', () => {
    const f = run([...calm(2), sample({ overflows: 235, queue: 65, limit: 64, delayMax: 1.0, cpu: 1.0 }), sample({ overflows: 401, cpu: 0.9 }), ...calm(1, 401)]);
    assert.deepEqual(f.evidence.byCause, { blocked: 401, cpu: 0, burst: 0 });
  });

  it('drops up to 7 s after a block (its clients retrying at 1, 3, 7 s, all at once) are its echo, no more of them than the block dropped; later ones and the rest are bursts', () => {
    // blocked with 500 drops; 3 s later 700 drops with the loop free: 500 echo, 200 burst
    const f = run([...calm(2), sample({ overflows: 500, queue: 512, delayMax: 1.5, cpu: 1.0 }), ...calm(2, 500), sample({ overflows: 1200 }), ...calm(1, 1200)]);
    assert.deepEqual(f.evidence.byCause, { blocked: 1000, cpu: 0, burst: 200 });
    assert.equal(f.evidence.cause, 'blocked');
    // twin: the same loop-free drops 9 s after the block are a burst of their own
    const g = run([...calm(2), sample({ overflows: 500, queue: 512, delayMax: 1.5, cpu: 1.0 }), ...calm(8, 500), sample({ overflows: 1200 }), ...calm(1, 1200)]);
    assert.deepEqual(g.evidence.byCause, { blocked: 500, cpu: 0, burst: 700 });
    assert.equal(g.evidence.cause, 'burst');
  });

  it('names what blocked the loop where the capture of blocks put it on the interval, as eventloop-blocked names it', () => {
    const { found } = require('../../lib/findings/found/listen-queue-overflow');
    const { intervalBlocks } = require('../../lib/findings/blockers');
    const own = (overflows, blockedSeconds) => ({ overflows, synDrops: 0, address: '127.0.0.1', port: '80', queue: 512, limit: 511, listeners: 1, blockedSeconds, delayMax: blockedSeconds, cpuShare: 1, seconds: 1, netns: null });
    // The interval's blocks as the window keeps them (lib/findings/blockers.js): 1.5 s, 90 % in
    // zlib.gzipSync called from app.js:12.
    const frame = (fn, file, line) => ({ function: fn, file, line, package: null });
    const blocks = intervalBlocks({
      capturing: true, unavailable: null, thresholdSeconds: 0.1, dropped: 0, missed: 0,
      blocks: [{ durationSeconds: 1.5, samples: 500, gcShare: 0.1, route: null, uncaptured: null, heap: null, blockers: [{ frame: frame('writeSync', '', 0), call: frame('gzipSync', 'node:zlib', 850), appFrame: frame('compress', 'app.js', 12), share: 0.9 }] }],
    });
    const window = [{ seconds: 1, blocks: null, own: { [ID]: own(0, 0) } }, { seconds: 1, blocks, own: { [ID]: own(50, 1.5) } }];
    const f = found(window, { listenOverflows: 1, listenCpuShare: 0.5 });
    assert.deepEqual(f.evidence.blockedBy, { name: '`zlib.gzipSync`', caller: 'app.js:12', share: 0.9 });
    assert.match(f.summary, /blocked up to 1\.50 s, by `zlib\.gzipSync`\)/);
    assert.match(f.advice[0], /Unblock the event loop \(`zlib\.gzipSync` at app\.js:12\)/);
    // No capture details: nothing named, as before.
    const bare = found([window[0], { ...window[1], blocks: null }], { listenOverflows: 1, listenCpuShare: 0.5 });
    assert.equal(bare.evidence.blockedBy, null);
  });

  it('bursts larger than the backlog with the loop free: the burst cause, and a backlog that holds them', () => {
    const f = run([...calm(2), sample({ overflows: 871, queue: 0, limit: 511 }), ...calm(2, 871)]);
    assert.equal(f.evidence.cause, 'burst');
    assert.match(f.summary, /All came with the loop free: bursts of connections larger than the backlog \(up to 871 dropped in one interval\)/);
    // never seen full at a sample: the counter is the namespace's, said so
    assert.equal(f.evidence.port.seenFull, false);
    assert.match(f.summary, /was not seen full at a sample \(0 at most of 511\): the counter is the network namespace's \(net:\[4026532177\]\)/);
    assert.ok(!f.advice.some((a) => /^Unblock/.test(a)));
    assert.ok(f.advice.some((a) => /backlog: 2048 \}/.test(a)), f.advice.join('\n'));
  });

  it('drops while the main thread waited for a CPU: the CPU cause, not a burst nor the app\'s block', () => {
    const f = run([...calm(2), sample({ overflows: 300, queue: 512, delayMax: 0.3, cpu: 0.1, wait: 0.9 }), ...calm(1, 300)]);
    assert.equal(f.evidence.cause, 'cpu');
    assert.equal(f.evidence.minCpuShare, 0.1);
    assert.match(f.summary, /waited for a CPU \(it ran 10 % of its runnable time at worst\)/);
    assert.match(f.advice[0], /CPU it waits for/);
  });

  it('twin: bursts that fit in the backlog with the loop free (the queue seen at 400 of 511, no drop): silent', () => {
    assert.equal(run([...calm(2), sample({ queue: 400 }), ...calm(3)]), null);
  });

  it('twin: a server that is simply busy (a 60 ms block now and then, queue short, no drop): silent', () => {
    assert.equal(run(Array.from({ length: 8 }, (_, i) => sample({ overflows: 7, queue: i % 3, delayMax: 0.06, cpu: 0.9 }))), null);
  });

  it('twin: drops counted before the window only (the first sample is the baseline), and an app that does not listen: silent', () => {
    assert.equal(run([sample({ overflows: 5000 }), ...calm(4, 5000)]), null);
    assert.equal(run([sample({ listen: false }), sample({ listen: false }), sample({ listen: false })]), null);
  });
});
