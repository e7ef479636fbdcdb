'use strict';

const assert = require('node:assert/strict');
const { createHistogram } = require('perf_hooks');
const { createEventLoopSampler } = require('../../lib/sources/eventloop');
const { Histogram } = require('../../lib/core/histogram');
const { EVENTLOOP_BUCKETS } = require('../../lib/snapshot/catalog');

const value = (points, name) => (points.find((p) => p.name === name) || {}).value;
const block = (ms) => {
  const end = Date.now() + ms;
  while (Date.now() < end);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe('samplers/eventloop', function () {
  let sampler;
  afterEach(() => sampler && sampler.close());

  it('a 200 ms block shows in the interval\'s max, and the next interval is clean again', async () => {
    sampler = createEventLoopSampler();
    await sleep(100);
    sampler.sample(); // start a fresh interval
    await sleep(50);
    block(200);
    await sleep(50);
    const points = sampler.sample();
    const max = value(points, 'nodejs.eventloop.delay.max');
    // The block delays the 10 ms timer by 190 to 200 ms (it may start just before a firing).
    assert.ok(max > 0.18 && max < 0.3, `max ${max} s`);
    assert.ok(value(points, 'nodejs.eventloop.delay.p50') < 0.02, 'most samples were not delayed');
    const h = points.find((p) => p.name === 'nodejs.eventloop.delay').histogram;
    const le = (b) => h.counts.slice(0, h.bounds.indexOf(b) + 1).reduce((a, c) => a + c, 0);
    assert.equal(h.count - le(0.1), 1, 'exactly one sample above 100 ms');
    assert.equal(le(0.25) - le(0.1), 1, 'and it is in (0.1, 0.25]');

    await sleep(150);
    const next = sampler.sample();
    assert.ok(value(next, 'nodejs.eventloop.delay.max') < 0.05, 'the block does not leak into the next interval');
  });

  it('tells a loop the app blocked (on a CPU or in a blocking call) from a thread waiting for a CPU (Linux)', async function () {
    sampler = createEventLoopSampler();
    if (sampler.details().blockedOnCpuMaxSeconds === null) this.skip();
    await sleep(100);
    // As the agent does: sample(), details(), endInterval().
    const interval = () => {
      sampler.sample();
      const d = sampler.details();
      sampler.endInterval();
      return d;
    };
    interval();
    // A blocking call: the thread sleeps 200 ms in Atomics.wait, needing no CPU; still the app's.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    await sleep(60);
    const d = interval();
    // Ground truth: the 200 ms the test blocked for; none of it was a wait for a CPU.
    assert.ok(d.blockedOnCpuMaxSeconds > 0.15 && d.blockedOnCpuMaxSeconds < 0.25, JSON.stringify(d));
    await sleep(100);
    assert.ok(interval().blockedOnCpuMaxSeconds < 0.05, 'the next interval starts over');
    // Busy for 200 ms: the loop is 200 ms late whether the thread ran or waited for a CPU; the
    // figure is the lateness less the interval's wait for a CPU.
    block(200);
    await sleep(60);
    const after = interval();
    const waited = after.mainThreadWaitSeconds;
    assert.ok(after.blockedOnCpuMaxSeconds <= 0.2 - waited + 0.03, `${after.blockedOnCpuMaxSeconds} s blocked, ${waited} s waited for a CPU`);
    assert.ok(after.blockedOnCpuMaxSeconds >= 0.2 - waited - 0.03, `${after.blockedOnCpuMaxSeconds} s blocked, ${waited} s waited for a CPU`);
  });

  it('one reading of the interval for every reader: the tick\'s (the blockers capture\'s start) is details\' (Linux)', async function () {
    sampler = createEventLoopSampler();
    if (sampler.details().mainThreadWaitSeconds === null) this.skip();
    sampler.sample();
    sampler.endInterval();
    await sleep(30);
    block(150);
    await sleep(30);
    const tick = { resources: new Map() };
    const points = sampler.sample(tick);
    await sleep(50); // time passes between the samplers and details(): the figures do not move
    const d = sampler.details();
    const loop = tick.loop;
    assert.equal(loop.lateSeconds, value(points, 'nodejs.eventloop.delay.max'));
    assert.equal(loop.mainThreadWaitSeconds, d.mainThreadWaitSeconds);
    assert.equal(loop.mainThreadCpuSeconds, d.mainThreadCpuSeconds);
    assert.equal(loop.blockedOnCpuMaxSeconds, d.blockedOnCpuMaxSeconds);
    const again = sampler.details();
    assert.deepEqual([again.mainThreadWaitSeconds, again.mainThreadCpuSeconds, again.blockedOnCpuMaxSeconds], [d.mainThreadWaitSeconds, d.mainThreadCpuSeconds, d.blockedOnCpuMaxSeconds]);
    // Ground truth: the 150 ms the test ran (its CPU, less what it waited for one)
    assert.ok(loop.mainThreadCpuSeconds + loop.mainThreadWaitSeconds >= 0.14, JSON.stringify(loop));
    assert.ok(loop.spanSeconds >= 0.2 && loop.spanSeconds < 1, JSON.stringify(loop));
    sampler.endInterval();
    // The next interval starts where this one's reading ended: the 50 ms before details() are in it.
    sampler.sample(tick);
    assert.ok(tick.loop.spanSeconds >= 0.045, JSON.stringify(tick.loop));
  });

  it('the wait for a CPU over a lateness longer than its interval: the readings before it count, interpolated (waitAt)', () => {
    const { waitAt, WAITS } = require('../../lib/sources/eventloop')._internal;
    const ring = new Float64Array(2 * WAITS);
    let written = 0;
    // readings every 0.3 s from t = 10 s, the thread waiting 0.2 s of each 0.3 s (a starved core)
    for (let k = 0; k <= 20; k++) {
      const i = (written++ % WAITS) * 2;
      ring[i] = 10 + 0.3 * k;
      ring[i + 1] = 0.2 * k;
    }
    const now = 16; // the newest reading (k = 20), waited 4 s so far
    assert.ok(Math.abs(waitAt(ring, written, now) - 4) < 1e-9);
    // a lateness of 0.75 s: from 15.25, between the readings at 15.1 (3.4) and 15.4 (3.6)
    assert.ok(Math.abs(4 - waitAt(ring, written, now - 0.75) - 0.5) < 1e-9);
    // further back than the 16 kept (the oldest at 11.5 s, 1.0 s waited): nothing before it counted
    assert.ok(Math.abs(waitAt(ring, written, 5) - 1) < 1e-9);
    assert.equal(waitAt(ring, 0, 5), 0);
  });

  it('processCpuSeconds: the whole process\'s CPU time in the interval (cpu-starved reads it against the CPU budget)', async () => {
    sampler = createEventLoopSampler();
    sampler.sample();
    sampler.endInterval();
    // Ground truth: the CPU time the test burns (process.cpuUsage of its own, every thread).
    const before = process.cpuUsage();
    block(200);
    sampler.sample();
    const d = sampler.details();
    const truth = (() => {
      const u = process.cpuUsage(before);
      return (u.user + u.system) / 1e6;
    })();
    assert.ok(truth > 0.05, `the test burnt ${truth} s of CPU`);
    // The interval began before `before` and ended just after it: at least the truth, not much more.
    assert.ok(d.processCpuSeconds >= truth - 0.005 && d.processCpuSeconds <= truth + 0.05, `${d.processCpuSeconds} s vs ${truth} s`);
    // It is the process's, not the main thread's only: at least what the main thread ran.
    if (d.mainThreadCpuSeconds !== null) assert.ok(d.processCpuSeconds >= d.mainThreadCpuSeconds - 0.005, JSON.stringify(d));
  });

  it('timer mode: a block that ends with the sample due and another timer due first is not lost (the timer keeps its own last firing)', async () => {
    sampler = createEventLoopSampler({ mode: 'timer' });
    await sleep(100);
    sampler.sample();
    await sleep(20); // a loop turn: the interval's reset is done
    // Due 1 ms after the block starts (before the monitor's next 10 ms firing, almost always),
    // then the sample, due in the middle of the block: after the block Node runs both timers
    // first, and the monitor's firing that measures the block comes after the sample.
    const maxes = [];
    setTimeout(() => {}, 1);
    setTimeout(() => maxes.push(value(sampler.sample(), 'nodejs.eventloop.delay.max') || 0), 100);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 250);
    await sleep(100);
    maxes.push(value(sampler.sample(), 'nodejs.eventloop.delay.max') || 0);
    // Ground truth: one 250 ms block; it is in one of the two intervals, and once.
    const seen = maxes.filter((m) => m > 0.2);
    assert.equal(seen.length, 1, `interval maxima ${maxes}`);
    assert.ok(seen[0] < 0.3, `interval maxima ${maxes}`);
    const h = sampler.sample().find((p) => p.name === 'nodejs.eventloop.delay').histogram;
    assert.ok(h.sum > 0.2, 'and in the cumulative histogram');
  });

  // Ground truth: a 200 ms busy-wait inside a callback of each kind, the poll phase's included
  // (threadpool completions: fs, dns.lookup), which Node's samplePerIteration histogram misses.
  it('a 200 ms block in an fs.readFile, a dns.lookup or a setTimeout callback reads >= 185 ms', async () => {
    const fs = require('fs');
    const dns = require('dns');
    const cases = {
      'fs.readFile': (cb) => fs.readFile(__filename, cb),
      'dns.lookup': (cb) => dns.lookup('localhost', cb),
      setTimeout: (cb) => setTimeout(cb, 5),
    };
    sampler = createEventLoopSampler();
    await sleep(100);
    const maxes = {};
    for (const [name, run] of Object.entries(cases)) {
      sampler.sample();
      await sleep(20);
      await new Promise((resolve) => run(() => {
        block(200);
        resolve();
      }));
      await sleep(30);
      maxes[name] = value(sampler.sample(), 'nodejs.eventloop.delay.max') || 0;
    }
    // How late the 10 ms timer fired, which may have been due up to 10 ms after the block began.
    for (const name of Object.keys(cases)) {
      assert.ok(maxes[name] >= 0.185 && maxes[name] < 0.3, JSON.stringify(maxes));
    }
  });

  // The same for a socket's data callback, the data written by another process while this loop
  // sleeps in its poll.
  it('a 200 ms block in a socket\'s data callback reads >= 185 ms', async () => {
    const net = require('net');
    sampler = createEventLoopSampler();
    let blocked = 0;
    const server = net.createServer((c) => c.on('data', () => {
      block(200);
      blocked++;
    })).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const child = require('child_process').spawn(process.execPath, [require('path').join(__dirname, '..', 'fixtures', 'socket-writer.js'), String(server.address().port), '1'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const line = (want) => new Promise((resolve) => {
      let out = '';
      const onData = (d) => {
        out += d;
        if (!out.includes(want)) return;
        child.stdout.off('data', onData);
        resolve();
      };
      child.stdout.on('data', onData);
    });
    try {
      await line('ready\n');
      await sleep(100);
      sampler.sample();
      await sleep(20);
      child.stdin.write('go 0\n');
      await line('done\n');
      while (blocked === 0) await sleep(10);
      await sleep(30);
      const max = value(sampler.sample(), 'nodejs.eventloop.delay.max') || 0;
      assert.ok(max >= 0.185 && max < 0.3, `max ${max} s`);
    } finally {
      child.stdin.end();
      process.kill(child.pid, 'SIGTERM');
      server.close();
    }
  });

  // The same in timer mode's quiet state (a 100 ms JavaScript timer, which also reads the time the
  // loop was busy since its last firing), for a 100 ms block: the default on every Node.
  it('timer mode, quiet: a 100 ms block in an fs.readFile, dns.lookup, socket data or setTimeout callback reads >= 95 ms', async () => {
    const fs = require('fs');
    const dns = require('dns');
    const net = require('net');
    sampler = createEventLoopSampler();
    const server = net.createServer((c) => c.on('data', () => {
      block(100);
      c.write('k');
    })).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const client = net.connect(server.address().port, '127.0.0.1');
    await new Promise((r) => client.once('connect', r));
    const cases = {
      'fs.readFile': (cb) => fs.readFile(__filename, () => cb(block(100))),
      'dns.lookup': (cb) => dns.lookup('localhost', () => cb(block(100))),
      'socket data': (cb) => {
        client.once('data', () => cb());
        client.write('x');
      },
      setTimeout: (cb) => setTimeout(() => cb(block(100)), 5),
    };
    const maxes = {};
    try {
      for (const [name, run] of Object.entries(cases)) {
        // Quiet: a second with few wake-ups turns the timer to 100 ms.
        for (let waited = 0; sampler.timerPeriodMs !== 100 && waited < 5000; waited += 50) await sleep(50);
        assert.equal(sampler.timerPeriodMs, 100, `quiet before ${name}`);
        sampler.sample();
        await sleep(30);
        await new Promise((resolve) => run(resolve));
        await sleep(120); // the coarse timer fires after the block
        maxes[name] = value(sampler.sample(), 'nodejs.eventloop.delay.max') || 0;
      }
    } finally {
      client.destroy();
      server.close();
    }
    // Ground truth: the test's 100 ms block in each (Date.now() has 1 ms steps).
    for (const name of Object.keys(cases)) assert.ok(maxes[name] >= 0.095 && maxes[name] < 0.2, JSON.stringify(maxes));
  });

  it('an idle loop reads near zero delay (lateness, not the timer period)', async () => {
    sampler = createEventLoopSampler();
    await sleep(300);
    const points = sampler.sample();
    const mean = value(points, 'nodejs.eventloop.delay.mean');
    assert.ok(mean < 0.005, `mean ${mean}`);
    assert.ok(value(points, 'nodejs.eventloop.delay.min') >= 0);
  });

  it('utilization tracks a busy loop', async () => {
    sampler = createEventLoopSampler();
    await sleep(20);
    sampler.sample();
    block(300);
    await sleep(30);
    const busy = value(sampler.sample(), 'nodejs.eventloop.utilization');
    assert.ok(busy > 0.7, `busy ${busy}`);
    await sleep(300);
    const idle = value(sampler.sample(), 'nodejs.eventloop.utilization');
    assert.ok(idle < 0.3, `idle ${idle}`);
  });

  it('an interval without samples exports no min/max/percentiles and no NaN', () => {
    sampler = createEventLoopSampler();
    const points = sampler.sample(); // no timer has fired yet
    assert.equal(value(points, 'nodejs.eventloop.delay.max'), undefined);
    assert.ok(points.every((p) => p.histogram || Number.isFinite(p.value)));
  });

  it('fills buckets from the HDR histogram exactly (checked against values recorded by the test)', () => {
    // Lateness as the clock's histogram holds it (ns; an HDR histogram records 1 ns at least).
    const lateMs = [0, 0.5, 0.9, 2, 2.4, 4, 7, 12, 30, 30, 60, 120, 400, 900, 3000];
    const rec = createHistogram();
    for (const ms of lateMs) rec.record(Math.max(1, Math.round(ms * 1e6)));
    const { addToBuckets } = require('../../lib/sources/eventloop')._internal;
    const h = new Histogram(EVENTLOOP_BUCKETS);
    addToBuckets(h, rec, rec.count);
    const want = new Histogram(EVENTLOOP_BUCKETS);
    for (const ms of lateMs) want.observe(ms / 1000);
    assert.deepEqual(h.counts, want.counts);
    assert.equal(h.count, lateMs.length);
    assert.ok(Math.abs(h.sum - want.sum) / want.sum < 0.001, `sum ${h.sum} vs ${want.sum}`);
  });
});

describe('samplers/eventloop: its mode and libuv loop metrics', function () {
  let sampler;
  afterEach(() => sampler && sampler.close());

  it('says which mode it runs in: timer', async function () {
    sampler = createEventLoopSampler();
    await sleep(50);
    const mode = sampler.sample().find((p) => p.name === 'nodejs.eventloop.delay.mode');
    assert.deepEqual({ attributes: mode.attributes, value: mode.value }, { attributes: { 'nodejs.eventloop.delay.mode': 'timer' }, value: 1 });
  });

  it('adds no async resource per loop iteration (an app\'s async_hooks see none)', async function () {
    const async_hooks = require('async_hooks');
    const seen = { sampler: 0, control: 0 };
    let counting = null;
    const hook = async_hooks.createHook({ init(id, type) { if (counting && type === 'Immediate') seen[counting]++; } }).enable();
    try {
      const fs = require('fs');
      // 200 iterations (an fs.stat completes in the poll phase of an iteration of its own).
      const iterate = () => new Promise((resolve) => {
        let n = 0;
        (function next() { if (++n < 200) fs.stat(__filename, next); else resolve(); })();
      });
      sampler = createEventLoopSampler();
      await sleep(20);
      counting = 'sampler';
      await iterate();
      // The control: 10 immediates the test queues itself are seen.
      counting = 'control';
      await new Promise((resolve) => {
        let n = 0;
        (function next() { if (++n <= 10) setImmediate(next); else resolve(); })();
      });
      counting = null;
    } finally {
      hook.disable();
    }
    // Ground truth: the test's 199 stats each end in an iteration of their own, and it queues no
    // immediate itself while they run; then it queues 10.
    assert.deepEqual(seen, { sampler: 0, control: 10 });
  });

  it('counts loop iterations, I/O events, and events that waited for a busy loop (libuv uv_metrics_info)', async function () {
    const info = require('perf_hooks').performance.nodeTiming.uvMetricsInfo;
    if (!info) this.skip(); // this Node does not expose uvMetricsInfo
    const net = require('net');
    sampler = createEventLoopSampler();
    const read = () => {
      const points = sampler.sample();
      return Object.fromEntries(['iterations', 'events', 'events.waiting'].map((k) => [k, value(points, `nodejs.eventloop.${k}`)]));
    };
    // 500 chained setImmediates are 500 iterations.
    let before = read();
    await new Promise((resolve) => {
      let n = 0;
      (function spin() {
        if (++n < 500) setImmediate(spin);
        else resolve();
      })();
    });
    let after = read();
    const iterations = after.iterations - before.iterations;
    assert.ok(iterations >= 499 && iterations < 600, `iterations +${iterations}`);

    // Reads on M connections from another process: written while this loop idles, each read finds
    // it waiting in epoll (not counted as waiting); written while it is blocked, all M are waiting.
    const M = 10;
    const server = net.createServer((s) => s.on('data', () => {})).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const child = require('child_process').spawn(process.execPath, [require('path').join(__dirname, '..', 'fixtures', 'socket-writer.js'), String(server.address().port), String(M)], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    const line = (want) => new Promise((resolve) => {
      const check = () => {
        if (out.includes(want)) {
          out = out.replace(want, '');
          child.stdout.off('data', onData);
          resolve();
        }
      };
      const onData = (d) => {
        out += d;
        check();
      };
      child.stdout.on('data', onData);
      check();
    });
    try {
      await line('ready\n');
      await sleep(50);
      before = read();
      child.stdin.write('go 30\n');
      await line('done\n');
      await sleep(50);
      after = read();
      assert.ok(after.events - before.events >= M, `events +${after.events - before.events}`);
      const waitedIdle = after['events.waiting'] - before['events.waiting'];
      assert.ok(waitedIdle < M / 2, `${waitedIdle} of ${M} reads found the loop busy although it was idle`);
      before = read();
      child.stdin.write('go 2\n');
      block(300);
      await line('done\n');
      await sleep(50);
      after = read();
      assert.ok(after['events.waiting'] - before['events.waiting'] >= M, `waiting +${after['events.waiting'] - before['events.waiting']}`);
    } finally {
      child.stdin.end();
      process.kill(child.pid, 'SIGTERM');
      server.close();
    }
  });
});
