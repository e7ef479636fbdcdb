'use strict';

const assert = require('node:assert/strict');
const { ROOT, runNode, lastJson } = require('../helpers/child');
const { reuseFrozen, samplePoints, exactPoints } = require('../../lib/agent/sampling');

// A frozen object and every object in it frozen.
function deeplyFrozen(o) {
  if (o === null || typeof o !== 'object') return true;
  if (!Object.isFrozen(o)) return false;
  for (const k in o) if (!deeplyFrozen(o[k])) return false;
  return true;
}

describe('agent/sampling exactPoints', () => {
  it('the samplers\' points then the error points, in an array of exactly their length, whatever its parts were grown to', () => {
    const points = [];
    for (let i = 0; i < 150; i++) points.push({ name: 'p', attributes: {}, value: i });
    const errors = [{ name: 'uvscope.errors', attributes: {}, value: 1 }];
    const out = exactPoints(points, errors);
    assert.equal(out.length, 151);
    assert.deepEqual(out, [...points, ...errors]);
    assert.ok(out.every((p, i) => p === (i < 150 ? points[i] : errors[0])), 'the same objects');
    assert.deepEqual(exactPoints([], []), []);
  });
});

describe('agent/sampling reuseFrozen', () => {
  const fresh = () => ({
    time: 2,
    points: [{ name: 'a', attributes: { k: 'x' }, value: 1 }, { name: 'b', attributes: {}, value: 0.25 }],
    details: { pool: { size: 4, pending: { dns: 0, fs: 0 }, probe: { wait: 0.001 } }, cpu: { cpus: 2, list: [1, 2] } },
  });

  it('hands back the previous frozen parts that are equal, new ones where a leaf changed, and freezes the new whole', () => {
    const previous = reuseFrozen(undefined, { ...fresh(), time: 1 });
    assert.ok(deeplyFrozen(previous));
    const next = fresh();
    next.points[1].value = 0.5;
    next.details.pool.probe.wait = 0.002;
    const kept = next.details.pool.probe;
    const out = reuseFrozen(previous, next);
    assert.ok(deeplyFrozen(out));
    assert.equal(out, next, 'time changed: a new top');
    // Equal: the previous objects.
    assert.equal(out.points[0], previous.points[0]);
    assert.equal(out.details.pool.pending, previous.details.pool.pending);
    assert.equal(out.details.cpu, previous.details.cpu);
    // Changed: new objects with the new figures, up to the top.
    assert.notEqual(out.points, previous.points);
    assert.notEqual(out.points[1], previous.points[1]);
    assert.equal(out.points[1].value, 0.5);
    assert.equal(out.details.pool.probe, kept);
    assert.equal(out.details.pool.probe.wait, 0.002);
    assert.notEqual(out.details.pool, previous.details.pool);
    // The previous snapshot still says what it said.
    assert.equal(previous.points[1].value, 0.25);
    assert.equal(previous.details.pool.probe.wait, 0.001);
    assert.deepEqual(JSON.parse(JSON.stringify(out)), { ...fresh(), points: [fresh().points[0], { ...fresh().points[1], value: 0.5 }], details: { ...fresh().details, pool: { ...fresh().details.pool, probe: { wait: 0.002 } } } });
  });

  it('keeps nothing of the previous where keys, lengths, kinds or the sign of zero differ', () => {
    const previous = reuseFrozen(undefined, { a: { x: 1 }, b: { x: 1, y: 2 }, c: [1, 2], d: { z: 0 }, e: [1], f: { n: NaN } });
    const out = reuseFrozen(previous, { a: { x: 1, y: undefined }, b: { x: 1 }, c: [1, 2, 3], d: { z: -0 }, e: { 0: 1 }, f: { n: NaN } });
    assert.notEqual(out.a, previous.a);
    assert.ok(Object.hasOwn(out.a, 'y'));
    assert.notEqual(out.b, previous.b);
    assert.deepEqual(out.b, { x: 1 });
    assert.notEqual(out.c, previous.c);
    assert.equal(out.c.length, 3);
    assert.ok(Object.is(out.d.z, -0));
    assert.ok(!Array.isArray(out.e));
    assert.equal(out.f, previous.f, 'NaN is the same value');
  });

  it('compares only plain objects and arrays, takes objects that are not extensible as they are, reuses nothing unfrozen', () => {
    const m1 = new Map([['a', 1]]);
    const previous = reuseFrozen(undefined, { m: m1, live: Object.seal({ n: 1 }) });
    const m2 = new Map([['a', 2]]);
    const live = Object.seal({ n: 1 });
    const out = reuseFrozen(previous, { m: m2, live });
    assert.equal(out.m, m2, 'a Map is not compared');
    assert.equal(out.live, live, 'a sealed live object is taken as it is');
    assert.ok(!Object.isFrozen(live));
    const notFrozen = { x: 1 };
    assert.equal(reuseFrozen(notFrozen, { x: 1 }).x, 1);
    assert.notEqual(reuseFrozen(notFrozen, { x: 1 }), notFrozen, 'only a frozen previous is handed out again');
  });

  it('samplePoints finds a series again after one came before it, and takes frozen points as they are', () => {
    let extra = false;
    const frozen = Object.freeze({ name: 'dns', attributes: Object.freeze({}), value: 1 });
    const samplers = [
      { name: 'a', sample: () => [...(extra ? [{ name: 'new', attributes: {}, value: 1 }] : []), { name: 'x', attributes: { k: '1' }, value: 1 }, { name: 'x', attributes: { k: '2' }, value: 2 }], close() {} },
      { name: 'b', sample: () => [frozen, { name: 'y', attributes: {}, value: 3 }], close() {} },
    ];
    const first = samplePoints(samplers, { resources: new Map() });
    extra = true;
    const second = samplePoints(samplers, { resources: new Map() }, first);
    assert.equal(second.length, 5);
    assert.equal(second[0].name, 'new');
    assert.equal(second[1], first[0]);
    assert.equal(second[2], first[1]);
    assert.equal(second[3], frozen);
    assert.equal(second[4], first[3]);
    assert.ok(second.every((p) => Object.isFrozen(p) && Object.isFrozen(p.attributes)));
    extra = false;
    const third = samplePoints(samplers, { resources: new Map() }, second);
    assert.deepEqual(third.map((p) => second.indexOf(p)), [1, 2, 3, 4]);
  });

  it('in the agent: a point or detail equal to the previous sample\'s is its object, a changed one is new, and the first snapshot keeps its figures', async () => {
    const r = await runNode(['-e', `
      const uvscope = require(${JSON.stringify(ROOT)});
      const agent = uvscope.start({ exporters: 'none', intervalMs: 3600000 });
      let n = 0;
      agent.samplers.push({
        name: 'fake',
        sample() { n++; return [{ name: 'fake.constant', attributes: { k: 'v' }, value: 7 }, { name: 'fake.counter', attributes: {}, value: n }]; },
        details() { return { constant: { a: 1, list: [1, 2] }, moving: { n } }; },
        close() {},
      });
      const first = agent.sampleNow();
      const second = agent.sampleNow();
      const p = (s, name) => s.points.find((x) => x.name === name);
      console.log(JSON.stringify({
        constantPoint: p(first, 'fake.constant') === p(second, 'fake.constant'),
        counterPoint: p(first, 'fake.counter') === p(second, 'fake.counter'),
        counters: [p(first, 'fake.counter').value, p(second, 'fake.counter').value],
        constantDetail: first.details.fake.constant === second.details.fake.constant,
        moving: [first.details.fake.moving.n, second.details.fake.moving.n],
        size: p(first, 'nodejs.uv.threadpool.size') === p(second, 'nodejs.uv.threadpool.size'),
        frozen: Object.isFrozen(second.details.fake.moving) && Object.isFrozen(second.points) && Object.isFrozen(second.details.fake.constant.list),
      }));
      uvscope.stop();
    `]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(lastJson(r.stdout), {
      constantPoint: true, counterPoint: false, counters: [1, 2], constantDetail: true, moving: [1, 2], size: true, frozen: true,
    });
  });
});
