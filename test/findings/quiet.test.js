'use strict';
// The engine does not evaluate a rule while every summary of its window is quiet for it
// (rule.quiet(), lib/findings/rule.js): counted calls on rules the test declares, and the real
// rules going silent as their last loud interval leaves the window and firing again as one enters.
// checkQuiet (on in every findings test) is the ground truth of each rule's quiet(): shown here to
// throw on a quiet() that lies.

const assert = require('node:assert/strict');
const Module = require('module');
const { defineRule } = require('../../lib/findings/rule');
const { createFindingsEngine } = require('../../lib/findings/engine');

const INDEX = require.resolve('../../lib/findings/index');
const ENGINE = require.resolve('../../lib/findings/engine');

// An engine module over the rules given, loaded apart (lib/findings/index.js stubbed for this
// load only): the real engine code, rules whose calls the test counts.
function engineOver(rules) {
  const saved = { index: require.cache[INDEX], engine: require.cache[ENGINE] };
  const stub = new Module(INDEX, null);
  stub.filename = INDEX;
  stub.loaded = true;
  stub.exports = Object.freeze(rules);
  require.cache[INDEX] = stub;
  delete require.cache[ENGINE];
  try {
    return require(ENGINE).createFindingsEngine;
  } finally {
    require.cache[INDEX] = saved.index;
    require.cache[ENGINE] = saved.engine;
  }
}

const docs = { means: 'm', fires: () => 'f', impact: 'i', advice: 'a', example: 'e' };

// A rule that fires while an interval of the window had a delay of 0.5 s or more, its calls counted.
function slowRule(id, { withQuiet = true, lying = false } = {}) {
  const calls = { evaluate: 0, quiet: 0, enter: 0 };
  const rule = defineRule({
    id,
    limits: {},
    docs,
    state: () => ({ entered: 0 }),
    enter(summary, state) {
      calls.enter++;
      state.entered++;
    },
    ...(withQuiet ? {
      quiet(s) {
        calls.quiet++;
        return lying || !(s.delayMax >= 0.5);
      },
    } : {}),
    evaluate(window) {
      calls.evaluate++;
      const n = window.filter((s) => s.delayMax >= 0.5).length;
      return n ? { summary: `${n} slow`, evidence: { n }, advice: [], impact: { score: 0 } } : null;
    },
  });
  return { rule, calls };
}

function sample(t, delayMax = 0.001) {
  return {
    time: t,
    points: [{ name: 'nodejs.eventloop.delay.max', attributes: {}, value: delayMax }],
    details: { dns: { inFlight: 0, hosts: [] } },
  };
}

describe('findings engine: rules not evaluated over a quiet window', () => {
  it('stops calling evaluate() once the window is quiet, calls it again as a loud interval enters, until that one leaves', () => {
    const quiet = slowRule('slow-quiet');
    const always = slowRule('slow-always', { withQuiet: false });
    const create = engineOver([quiet.rule, always.rule]);
    // a window of 5 summaries (windowMs 5000 at 1 s); checkQuiet off, so the calls are the engine's
    const engine = create({ intervalMs: 1000, startTime: 0, limits: { windowMs: 5000 } });
    const fired = [];
    let t = 0;
    const step = (delay) => {
      const found = engine.evaluate(sample((t += 1000), delay));
      fired.push(found.filter((f) => f.id === 'slow-quiet').length);
    };
    for (let i = 0; i < 3; i++) step(0.001);
    assert.equal(quiet.calls.evaluate, 0, 'a quiet window: not evaluated');
    assert.equal(always.calls.evaluate, 3, 'a rule without quiet(): every sample');
    step(0.8); // loud: enters the window
    assert.equal(quiet.calls.evaluate, 1);
    for (let i = 0; i < 4; i++) step(0.001); // it stays in the window for 4 more samples
    assert.equal(quiet.calls.evaluate, 5);
    step(0.001); // it has left: quiet again
    step(0.001);
    assert.equal(quiet.calls.evaluate, 5);
    step(0.9); // loud again
    assert.equal(quiet.calls.evaluate, 6);
    assert.deepEqual(fired, [0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1], 'fires exactly while a loud interval is in the window');
    assert.equal(always.calls.evaluate, 11);
    assert.equal(quiet.calls.quiet, 11, 'quiet() once per summary');
    assert.equal(quiet.calls.enter, 11, 'enter() for every summary, quiet or not');
  });

  it('checkQuiet evaluates a skipped rule anyway and throws if it fires (a quiet() that lies)', () => {
    const liar = slowRule('slow-liar', { lying: true });
    const create = engineOver([liar.rule]);
    const checked = create({ intervalMs: 1000, startTime: 0, limits: { windowMs: 5000 }, checkQuiet: true });
    checked.evaluate(sample(1000));
    assert.throws(() => checked.evaluate(sample(2000, 0.8)), /slow-liar: quiet\(\) held for every summary of the window, yet evaluate\(\) fired/);
    // twin: without checkQuiet the lie goes unseen (the rule is skipped, nothing found)
    const unchecked = create({ intervalMs: 1000, startTime: 0, limits: { windowMs: 5000 } });
    unchecked.evaluate(sample(1000));
    assert.deepEqual(unchecked.evaluate(sample(2000, 0.8)), []);
  });
});

describe('findings engine: the real rules over windows that go quiet (checkQuiet on)', () => {
  const engine = (limits = {}) => createFindingsEngine({ checkQuiet: true, intervalMs: 1000, startTime: 0, limits: { windowMs: 5000, ...limits } });
  const points = (delayMax) => [
    { name: 'nodejs.eventloop.delay.max', attributes: {}, value: delayMax },
    { name: 'nodejs.eventloop.delay.p99', attributes: {}, value: Math.min(delayMax, 0.002) },
  ];
  const loop = { mainThreadCpuSeconds: 0.5, mainThreadWaitSeconds: 0 };

  it('eventloop-blocked: fires while 2 blocked intervals are in the window, not once one has left, again when another enters', () => {
    const e = engine();
    const ids = [];
    const delays = [0.001, 0.3, 0.3, 0.001, 0.001, 0.001, 0.001, 0.001, 0.3];
    delays.forEach((d, i) => {
      const found = e.evaluate({ time: (i + 1) * 1000, points: points(d), details: { dns: { inFlight: 0, hosts: [] }, eventloop: loop } });
      ids.push(found.some((f) => f.id === 'eventloop-blocked') ? 1 : 0);
    });
    // blocked at samples 2 and 3; sample 2 leaves the window (5) at sample 7; sample 9 blocks again
    // with sample 3 gone: one blocked interval, no finding
    assert.deepEqual(ids, [0, 0, 1, 1, 1, 1, 0, 0, 0]);
  });

  it('listen-queue-overflow: fires while the rise is in the window; a steady counter after it is quiet, and a new rise fires again', () => {
    const e = engine();
    const listen = (overflows) => ({
      listeners: [{ address: '127.0.0.1', port: '8080', family: 4, backlog: null, limit: 511, queue: 0, maxSeen: 0 }],
      omitted: 0, somaxconn: 4096, netns: { id: 'net:[1]', sharedWithPid1: false },
      counters: { ListenOverflows: overflows, ListenDrops: overflows, TCPReqQFullDrop: 0 }, unavailable: null,
    });
    const counters = [100, 100, 140, 140, 140, 140, 140, 140, 140, 150];
    const ids = counters.map((c, i) => (e.evaluate({ time: (i + 1) * 1000, points: points(0.001), details: { dns: { inFlight: 0, hosts: [] }, eventloop: loop, listen: listen(c) } })
      .some((f) => f.id === 'listen-queue-overflow') ? 1 : 0));
    // the rise 100 -> 140 at sample 3 is in the window until sample 2 (its baseline) leaves at 7
    assert.deepEqual(ids, [0, 0, 1, 1, 1, 1, 0, 0, 0, 1]);
  });

  it('http-no-keepalive: fires on new connections in the window, quiet once they have left', () => {
    const e = engine();
    const conns = (n) => ({ connections: n, connectSeconds: n * 0.001, hosts: [{ host: 'localhost', requests: n, newConnections: n }] });
    const counts = [0, 30, 0, 0, 0, 0, 0];
    const ids = counts.map((n, i) => (e.evaluate({ time: (i + 1) * 1000, points: points(0.001), details: { dns: { inFlight: 0, hosts: [] }, connections: conns(n) } })
      .some((f) => f.id === 'http-no-keepalive') ? 1 : 0));
    assert.deepEqual(ids, [0, 1, 1, 1, 1, 1, 0]);
  });

  it('a limit of 0 makes a rule never quiet (a quiet window could fire): listen-queue-overflow with listenOverflows 0', () => {
    // With listenOverflows 0, a steady counter read twice fires (a rise of 0 >= 0): quiet() must
    // not hold, or checkQuiet throws here.
    const e = engine({ listenOverflows: 0 });
    const listen = { listeners: [], omitted: 0, somaxconn: 4096, netns: null, counters: { ListenOverflows: 5, ListenDrops: 5, TCPReqQFullDrop: 0 }, unavailable: null };
    e.evaluate({ time: 1000, points: points(0.001), details: { dns: { inFlight: 0, hosts: [] }, eventloop: loop, listen } });
    const found = e.evaluate({ time: 2000, points: points(0.001), details: { dns: { inFlight: 0, hosts: [] }, eventloop: loop, listen } });
    assert.ok(found.some((f) => f.id === 'listen-queue-overflow'));
  });

  it('heap-limit-above-container: fires on the latest limits with no room, silent once they leave room', () => {
    const e = engine();
    const MiB = 1048576;
    const limits = (heap, container) => [...points(0.001),
      { name: 'v8js.memory.heap.limit', attributes: {}, value: heap * MiB },
      { name: 'nodejs.memory.constrained', attributes: {}, value: container * MiB }];
    const heaps = [128, 560, 560, 128, 128];
    const ids = heaps.map((h, i) => (e.evaluate({ time: (i + 1) * 1000, points: limits(h, 256), details: { dns: { inFlight: 0, hosts: [] } } })
      .some((f) => f.id === 'heap-limit-above-container') ? 1 : 0));
    assert.deepEqual(ids, [0, 1, 1, 0, 0]);
  });

  it('dns-search-expansion: fires while lookups of a name short of ndots are in the window, until the 5 s bucket that carries them leaves', () => {
    // the full 60 s window: per-hostname figures merge into 5 s buckets, carried by a bucket's
    // latest summary, which stays in the window after the summary of the lookups has left
    const e = createFindingsEngine({ checkQuiet: true, intervalMs: 1000, startTime: 0 });
    const resolver = { nameservers: ['127.0.0.2'], search: ['svc.cluster.local', 'cluster.local'], ndots: 5, timeout: 5, attempts: 2, options: [], hostsNames: [] };
    const host = { name: 'api.example.com', lookups: 3, errors: 0, seconds: 0.006, duplicates: 0, maxInFlight: 1, timeouts: 0, maxSeconds: 0.002, inFlight: 0, callers: [] };
    const fired = [];
    for (let i = 1; i <= 70; i++) {
      const found = e.evaluate({ time: i * 1000, points: points(0.001), details: { dns: { inFlight: 0, hosts: i === 2 ? [host] : [] }, resolver } });
      if (found.some((f) => f.id === 'dns-search-expansion')) fired.push(i);
    }
    // the bucket of samples 1 to 5 (its latest carries sample 2's lookups) leaves at sample 65
    assert.deepEqual(fired, Array.from({ length: 63 }, (_, k) => k + 2));
  });

  it('cpu-throttled: fires while throttled periods are in the window, silent once the counter has been steady for a window', () => {
    const e = engine();
    const cgroup = (periods, throttled) => [...points(0.001),
      { name: 'container.cpu.periods', attributes: {}, value: periods },
      { name: 'container.cpu.throttled.periods', attributes: {}, value: throttled },
      { name: 'container.cpu.throttled.time', attributes: {}, value: throttled * 0.05 }];
    const cpu = (t) => ({ quotaCpus: 0.5, cpus: 2, affinityCpus: 2, processCpuTotalSeconds: t * 0.5 });
    // 10 periods a second, 8 of them throttled in seconds 2 and 3, none after
    const counters = [[10, 0], [20, 8], [30, 16], [40, 16], [50, 16], [60, 16], [70, 16], [80, 16]];
    const ids = counters.map(([p, th], i) => (e.evaluate({ time: (i + 1) * 1000, points: cgroup(p, th), details: { dns: { inFlight: 0, hosts: [] }, eventloop: loop, cpu: cpu(i + 1) } })
      .some((f) => f.id === 'cpu-throttled') ? 1 : 0));
    // fires from sample 3 (20 periods since the first, 16 throttled); at sample 6 the first
    // reading has left the window (5): 40 periods since 20, 8 throttled (20 %, under 25 %)
    assert.deepEqual(ids, [0, 0, 1, 1, 1, 0, 0, 0]);
  });
});
