'use strict';

// The tracer against a real native addon (test/fixtures/addon, N-API, built per Node version with
// node-gyp against that Node's own headers): its async work is kind `other` under the addon's own
// resource name, counted exactly; and an addon that throws on completion ends the app exactly as
// it does without uvscope.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { REGISTER, FIXTURES, runNode, lastJson } = require('../../helpers/child');
const { buildAddon } = require('../../helpers/addon');

const APP = path.join(FIXTURES, 'tracer-addon-app.js');
const THROW_APP = path.join(FIXTURES, 'addon-throw-app.js');
const sum = (xs) => xs.reduce((a, b) => a + b, 0);

function lineOf(file, marker) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const i = lines.findIndex((l) => l.includes(marker));
  assert.notEqual(i, -1, marker);
  return `test/fixtures/${path.basename(file)}:${i + 1}`;
}

let warned = false;

describe('tracer with a native addon', function () {
  this.timeout(120000);
  let addon;

  before(async function () {
    try {
      addon = (await buildAddon()).file;
    } catch (err) {
      // CI must build it (.ci/run installs the toolchain); elsewhere, no compiler or headers is a skip.
      if (process.env.CI) throw new Error(`the test addon must build in CI (CI=${process.env.CI}): ${err.message}`, { cause: err });
      if (!warned) {
        warned = true;
        console.warn(`[uvscope tests] skipping the native addon tests: ${err.message.split('\n')[0]}`);
      }
      this.skip();
    }
  });

  async function scenario(name, env = {}, flags = []) {
    const r = await runNode([...flags, APP], {
      env: { FIXTURE_SCENARIO: name, FIXTURE_ADDON: addon, UVSCOPE_TRACER: 'on', UV_THREADPOOL_SIZE: '4', ...env },
      timeoutMs: 60000,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /UVSCOPE_/, r.stderr);
    return lastJson(r.stdout);
  }

  it('K addon jobs in flight: pending{kind="other"} is K; job.duration under the addon\'s resource name has count K and the app\'s own sum', async () => {
    const r = await scenario('inFlight', { FIXTURE_K: '3', FIXTURE_MS: '300' });
    assert.equal(r.pendingDuring, r.K);
    assert.equal(r.pendingAfter, 0);
    const during = r.jobsDuring.find((j) => j.type === 'UvscopeTestWork');
    assert.equal(during.kind, 'other');
    assert.equal(during.pending, r.K);
    assert.deepEqual(during.callers, [{ caller: lineOf(APP, 'SUBMIT-ADDON'), count: r.K }]);
    const h = r.histograms.find((x) => x.type === 'UvscopeTestWork');
    assert.equal(h.kind, 'other');
    assert.equal(h.count, r.K);
    // The app's clock starts before the call and stops in the callback: the tracer's interval
    // (init to before) lies inside it, a few hundred microseconds shorter at most.
    assert.ok(h.sum <= sum(r.times), `${h.sum} <= ${sum(r.times)}`);
    assert.ok(h.sum >= sum(r.times) - 0.005 * r.K, `${h.sum} vs ${sum(r.times)}`);
    assert.ok(h.sum >= r.K * r.ms / 1000, `each job slept ${r.ms} ms: ${h.sum}`);
    assert.deepEqual(r.histograms.map((x) => x.kind).filter((k) => k === 'other').length, 1);
    assert.deepEqual(r.errors, []);
  });

  it('the type label is bounded: 20 addon names kept, at most 100 characters each, the rest under _other', async () => {
    const r = await scenario('names');
    const other = r.histograms.filter((x) => x.kind === 'other');
    assert.equal(sum(other.map((x) => x.count)), r.names);
    assert.equal(other.length, 21);
    assert.equal(other[0].type, 'L'.repeat(100));
    assert.deepEqual(other.slice(1, 20).map((x) => x.type), Array.from({ length: 19 }, (_, i) => `Name${String(i).padStart(2, '0')}`));
    assert.deepEqual(other[20], { type: '_other', kind: 'other', count: r.names - 20, sum: other[20].sum });
    assert.deepEqual(r.errors, []);
  });

  it('an addon\'s async work deleted without ever being queued stops counting as pending once V8 collects it', async () => {
    const r = await scenario('dropped', {}, ['--expose-gc']);
    assert.equal(r.created, 2, 'its init is all the tracer sees of it at first (and one job is running)');
    assert.equal(r.afterGc, 1, 'the job still running is pending; the dropped one is not');
    assert.equal(r.afterWork, 0);
    assert.deepEqual(r.errors, []);
  });

  describe('an addon that throws on completion: the app ends exactly as without uvscope', () => {
    for (const thrower of ['native', 'js']) {
      for (const handler of [true, false]) {
        it(`${thrower === 'native' ? 'the addon\'s complete callback throws' : 'the JS callback of an addon job throws'}, ${handler ? 'with' : 'without'} an uncaughtException handler`, async () => {
          const env = { FIXTURE_ADDON: addon, FIXTURE_THROW: thrower, ...(handler ? { FIXTURE_HANDLER: '1' } : {}) };
          const without = await runNode([THROW_APP], { env });
          const withAgent = await runNode(['--require', REGISTER, THROW_APP], {
            env: { ...env, UVSCOPE_TRACER: 'on', UVSCOPE_PROMETHEUS_PORT: '0', UVSCOPE_INTERVAL_MS: '50' },
          });
          assert.equal(withAgent.code, without.code, withAgent.stderr);
          assert.equal(withAgent.signal, without.signal);
          assert.equal(withAgent.stderr, without.stderr);
          if (!handler) {
            assert.equal(without.code, 1);
            assert.match(without.stderr, thrower === 'native' ? /the addon's complete callback threw/ : /RangeError: the callback of an addon job threw/);
            assert.equal(withAgent.stdout, without.stdout);
            return;
          }
          assert.equal(without.code, 0, without.stderr);
          const a = lastJson(without.stdout);
          const b = lastJson(withAgent.stdout);
          assert.deepEqual(b.events, a.events);
          const uncaught = a.events.filter((e) => e.uncaught).map((e) => e.uncaught);
          assert.deepEqual(uncaught, [thrower === 'native'
            ? { name: 'Error', message: 'the addon\'s complete callback threw', code: 'UVSCOPE_TEST_ADDON_THREW', origin: 'uncaughtException' }
            : { name: 'RangeError', message: 'the callback of an addon job threw', origin: 'uncaughtException' }]);
          assert.equal(a.agent, null);
          assert.equal(b.agent.armed, 1);
          assert.deepEqual(b.agent.errors, [], 'uvscope_errors_total counts failures of uvscope only');
          assert.deepEqual(b.agent.jobs, [['UvscopeTestWork', 3]], 'the job that threw counts like the others');
        });
      }
    }
  });
});
