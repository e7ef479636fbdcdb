'use strict';

// What the findings engine and the page history keep past young-generation GCs, per second, at a
// given interval: the steady app's recorded samples (bench/fixtures/steady-app-samples.json)
// replayed into evaluate() and History#add() as the agent calls them (points frozen before, sample
// and findings after), a full window first, then two windows' worth with a minor GC every --every
// intervals. Survived = old space growth (promotions; no full GC meanwhile) plus the young
// generation's growth: bytes that make V8 grow its young generation.
//
//   node --expose-gc bench/findings-survivors.js [--interval 100] [--every 10] [--lib <dir with lib/>]

const path = require('path');
const v8 = require('v8');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const intervalMs = Number(arg('--interval', 100));
const every = Number(arg('--every', 10));
const root = path.resolve(arg('--lib', path.join(__dirname, '..')));
if (typeof global.gc !== 'function') throw new Error('run with --expose-gc');

const { createFindingsEngine } = require(path.join(root, 'lib/findings/engine'));
const { createHistory } = require(path.join(root, 'lib/report/page'));
const { deepFreeze } = require(path.join(root, 'lib/agent/sampling'));
const recorded = require('./fixtures/steady-app-samples.json');
const rec = recorded.find((r) => r.options.intervalMs === intervalMs) || recorded[recorded.length - 1];
const raw = rec.samples.map((s) => JSON.stringify(s));
const t0 = rec.samples[0].time;
let n = 0;
function next() {
  const s = JSON.parse(raw[n % raw.length]);
  s.time = t0 + n * intervalMs;
  n++;
  deepFreeze(s.points);
  return s;
}

const size = Math.ceil(60000 / intervalMs);
const engine = createFindingsEngine({ intervalMs, startTime: t0 - intervalMs });
const history = createHistory();
function step() {
  const s = next();
  const found = engine.evaluate(s);
  deepFreeze(s);
  deepFreeze(found);
  history.add({ time: s.time, points: s.points });
}
for (let i = 0; i < 3 * size; i++) step();
const used = (name) => v8.getHeapSpaceStatistics().find((x) => x.space_name === name).space_used_size;
const N = 2 * size;
global.gc();
global.gc();
const old0 = used('old_space');
const young0 = used('new_space');
for (let i = 0; i < N; i++) {
  step();
  if ((i + 1) % every === 0) global.gc({ type: 'minor' });
}
global.gc({ type: 'minor' });
global.gc({ type: 'minor' });
const survived = used('old_space') - old0 + used('new_space') - young0;
console.log(`node ${process.version}, ${intervalMs} ms, a minor GC every ${every} intervals: ${Math.round(survived / N)} B survived per interval, ${(survived / N * 1000 / intervalMs / 1024).toFixed(1)} KB/s`);
