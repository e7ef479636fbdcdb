'use strict';

// The tracer's parts (jobs.js, routes.js, modes.js) load when it first arms: a process whose
// tracer never arms (auto mode, the default, on a pool that never fills) does not keep their code.
// A child process, so the modules other tests loaded do not count.

const assert = require('node:assert/strict');
const path = require('path');
const { spawnSync } = require('child_process');

const TRACER = path.join(__dirname, '..', '..', '..', 'lib', 'sources', 'threadpool', 'tracer.js');

function run(script) {
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH }, timeout: 20000 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

const LOADED = `const parts = () => Object.keys(require.cache).map((f) => require('path').basename(f)).filter((f) => ['jobs.js', 'routes.js', 'modes.js'].includes(f)).sort();`;

describe('threadpool tracer: its parts load at the first arming', () => {
  it('auto mode, never armed: collect() gives what an empty job book gives and nothing of jobs, routes or modes is loaded; arming loads them', () => {
    const out = run(`${LOADED}
      const { createTracer } = require(${JSON.stringify(TRACER)});
      const t = createTracer({ mode: 'auto', cooldownMs: 0 });
      const before = { parts: parts(), collected: t.collect(), pending: t.pendingByKind() };
      t.consider({ waitSeconds: 0, poolFull: false });
      const quiet = parts();
      t.consider({ waitSeconds: 1, poolFull: false });
      const armed = { parts: parts(), armed: t.armed, pending: [...t.pendingByKind()] };
      t.close();
      console.log(JSON.stringify({ before, quiet, armed }));`);
    assert.deepEqual(out.before.parts, []);
    assert.deepEqual(out.before.collected.jobs, []);
    assert.deepEqual(out.before.collected.histograms, []);
    assert.equal(out.before.collected.state.armed, false);
    assert.equal(out.before.collected.state.dropped, 0);
    assert.equal(out.before.pending, null);
    assert.deepEqual(out.quiet, []);
    assert.deepEqual(out.armed.parts, ['jobs.js', 'modes.js', 'routes.js']);
    assert.equal(out.armed.armed, true);
    assert.deepEqual(out.armed.pending, []);
  });

  it('mode on: armed (and its parts loaded) from the start; mode off: never loaded, close() still works', () => {
    const out = run(`${LOADED}
      const { createTracer } = require(${JSON.stringify(TRACER)});
      const off = createTracer({ mode: 'off' });
      off.consider({ waitSeconds: 9, poolFull: true });
      const offParts = parts();
      off.close();
      const on = createTracer({ mode: 'on' });
      const onState = { parts: parts(), armed: on.armed };
      on.close();
      console.log(JSON.stringify({ offParts, onState }));`);
    assert.deepEqual(out.offParts, []);
    assert.deepEqual(out.onState, { parts: ['jobs.js', 'modes.js', 'routes.js'], armed: true });
  });
});
