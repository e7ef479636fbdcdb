'use strict';
// Each finding rule declares itself once (lib/findings/rules/<id>.js): the engine, its limits and
// docs/findings.md (and the README's summary) all come from that declaration.

const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const RULES = require('../../lib/findings/index');
const { createFindingsEngine, LIMITS } = require('../../lib/findings/engine');
const { defineRule } = require('../../lib/findings/rule');
const { render } = require('../../scripts/docs');

const ROOT = path.join(__dirname, '..', '..');

describe('findings: one declaration per rule', () => {
  it('lib/findings/index.js lists every file of lib/findings/rules/ once, by its id', () => {
    const files = fs.readdirSync(path.join(ROOT, 'lib', 'findings', 'rules')).filter((f) => f.endsWith('.js')).map((f) => f.slice(0, -3)).sort();
    assert.deepEqual(RULES.map((r) => r.id).sort(), files);
    assert.equal(new Set(RULES.map((r) => r.id)).size, RULES.length);
  });

  it('the engine\'s limits are the rules\' limits, each declared by one rule, and any of them can be overridden', () => {
    for (const r of RULES) for (const [k, v] of Object.entries(r.limits)) assert.equal(LIMITS[k], v, `${r.id}: ${k}`);
    // dns-tail-latency over 60 lookups: below its 100-lookup limit, above a limit of 50.
    const host = {
      name: 'api.test', lookups: 30, seconds: 0.27, queueWaitSeconds: 0, maxInFlight: 1, duplicates: 0, timeouts: 0, maxSeconds: 0.15,
      recentLookups: 60, p50: 0.003, p99: 0.15, stddev: 0.027, mean: 0.009, tail: { lookups: 2, meanSeconds: 0.15, queueWaitSeconds: 0, resolveSeconds: 0.15 },
    };
    const sample = { time: 1000, points: [], details: { dns: { hosts: [host] } } };
    const ids = (limits) => createFindingsEngine({ checkQuiet: true, intervalMs: 1000, startTime: 0, limits }).evaluate(sample).map((f) => f.id);
    assert.deepEqual(ids({}), []);
    assert.deepEqual(ids({ tailMinLookups: 50 }), ['dns-tail-latency']);
  });

  it('a rule missing a part of its declaration fails at load', () => {
    const docs = { means: 'm', fires: () => 'f', impact: 'i', advice: 'a', example: 'e' };
    assert.throws(() => defineRule({ id: 'x-y', limits: {}, docs }), /evaluate\(\) missing/);
    assert.throws(() => defineRule({ id: 'x-y', limits: {}, docs: { ...docs, example: '' }, evaluate() {} }), /docs\.example missing/);
    assert.throws(() => defineRule({ id: 'X_Y', limits: {}, docs, evaluate() {} }), /kebab-case/);
    assert.ok(Object.isFrozen(defineRule({ id: 'x-y', limits: { a: 1 }, docs, evaluate() {} }).limits));
  });

  it('docs/findings.md holds the catalogue generated from the rules, with their limit values', () => {
    const text = fs.readFileSync(path.join(ROOT, 'docs', 'findings.md'), 'utf8');
    const block = render(text).blocks.find((b) => b.name === 'findings');
    assert.ok(block, 'docs/findings.md has a "findings" block');
    assert.equal(block.before, block.after, 'run node scripts/docs.js');
    for (const r of RULES) {
      assert.match(block.after, new RegExp(`### \`${r.id}\``));
      for (const [k, v] of Object.entries(r.limits)) assert.ok(block.after.includes(`\`${k}\` ${v}`), `${r.id}: ${k}`);
    }
    assert.match(block.after, /### `threadpool-saturated`[\s\S]*in 3\+ consecutive intervals: the `work` probe waited 50 ms/);
  });

  it('the README summary has one row per rule: id, meaning, example', () => {
    const { blocks } = render('<!-- generated: findings summary -->\n<!-- /generated -->\n');
    const rows = blocks[0].after.trim().split('\n').slice(2);
    assert.deepEqual(rows.map((r) => r.split(' | ')[0].slice(2)), RULES.map((r) => `\`${r.id}\``));
    assert.ok(rows.every((r) => r.split(' | ').length >= 3));
    assert.throws(() => render('<!-- generated: findings nonsense -->\n<!-- /generated -->\n'), /no findings block "nonsense"/);
  });
});
