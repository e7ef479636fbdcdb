'use strict';

// The blockers capture's start (UVSCOPE_BLOCKERS=auto) on a starved process: a loop late because
// the main thread waited for its own threads, which waited for the CPU, is not a block of the
// app's (lib/sources/blockers/starved.js); a block of the app's, on or off the CPU, still starts
// it. Ground truth: test/fixtures/starve-app.js does one known thing, pinned (taskset) to CPU 0,
// with busy processes the test starts on CPU 0 (starved) or CPU 1 (load on the other core) and
// stops by pid.

const assert = require('node:assert/strict');
const path = require('path');
const { spawn, execFileSync } = require('child_process');
const { runNode, lastJson, REGISTER, FIXTURES } = require('../helpers/child');
const { blockedSeconds } = require('../../lib/sources/blockers/starved');

const APP = path.join(FIXTURES, 'starve-app.js');

function hasTaskset() {
  try {
    execFileSync('taskset', ['-c', '0', 'true']);
    return require('os').cpus().length >= 2;
  } catch {
    return false;
  }
}

/** n busy processes on one CPU, each stopped by its pid. */
function busy(n, cpu) {
  const pids = [];
  for (let i = 0; i < n; i++) pids.push(spawn('taskset', ['-c', String(cpu), process.execPath, '-e', 'for(;;);'], { stdio: 'ignore' }).pid);
  return () => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  };
}

async function run(scenario) {
  const r = await runNode(['-c', '0', process.execPath, '--require', REGISTER, APP], {
    command: 'taskset',
    env: { UVSCOPE_INTERVAL_MS: '100', UVSCOPE_EXPORTERS: 'none', FIXTURE_SCENARIO: scenario },
    timeoutMs: 40000,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /UVSCOPE_INTERNAL_ERROR|UVSCOPE_BLOCKERS_UNAVAILABLE/);
  return lastJson(r.stdout);
}

const show = (x) => JSON.stringify({ facts: x.facts, late: x.late, details: x.details });

describe('sources/blockers: no start for a starved process', function () {
  this.timeout(120000);

  describe('the judgement (blockedSeconds)', () => {
    const loop = (late, cpu, wait) => ({ lateSeconds: late, spanSeconds: late + 0.1, mainThreadCpuSeconds: cpu, mainThreadWaitSeconds: wait, blockedOnCpuMaxSeconds: Math.max(0, late - wait) });
    it('the other threads\' wait for a CPU while the main thread waited off it is not blocked', () => {
      // 0.65 s late, 31 ms run, 0.33 s queued (the steady app's start): 0.32 s off the CPU;
      // the other threads ran 5 ms and waited 0.3 s for a CPU: 0.32 - (0.32 - 0.031 - 0.005) left
      assert.ok(Math.abs(blockedSeconds(loop(0.65, 0.031, 0.33), { ranSeconds: 0.005, waitSeconds: 0.3 }) - 0.036) < 1e-9);
    });
    it('never more than the part the main thread neither ran nor shared with the others\' running', () => {
      // a worker ran 0.4 s for the main thread (the app's work), waited 2 s: 0.4 s still blocked
      assert.ok(Math.abs(blockedSeconds(loop(0.5, 0.0, 0.0), { ranSeconds: 0.4, waitSeconds: 2 }) - 0.4) < 1e-9);
      // a 400 ms spin: its CPU is the block, whatever the others waited
      assert.ok(Math.abs(blockedSeconds(loop(0.4, 0.39, 0.0), { ranSeconds: 0, waitSeconds: 1 }) - 0.39) < 1e-9);
    });
    it('without the other threads\' figures, or the main thread\'s, as the event-loop source says', () => {
      assert.equal(blockedSeconds(loop(0.3, 0.0, 0.05), null), 0.25);
      assert.equal(blockedSeconds({ lateSeconds: 0.3, spanSeconds: 0.4, mainThreadCpuSeconds: null, mainThreadWaitSeconds: null, blockedOnCpuMaxSeconds: null }, { ranSeconds: 0, waitSeconds: 1 }), 0.3);
    });
  });

  describe('child processes pinned to CPU 0 (Linux, taskset, 2 CPUs)', () => {
    before(function () {
      if (process.platform !== 'linux' || !hasTaskset()) this.skip();
    });

    it('does not start where the main thread waited for its own thread starved of the CPU (ten busy processes on its CPU)', async () => {
      const stop = busy(10, 0);
      let out;
      try {
        await new Promise((r) => setTimeout(r, 300));
        out = await run('helper');
      } finally {
        stop();
      }
      // The ground truth that it reproduces the defect: an interval whose lateness less the main
      // thread's wait for a CPU reached the 100 ms threshold (what started the capture before)...
      assert.ok(out.late.some((x) => x.blockedOnCpuMaxSeconds >= 0.1), show(out));
      // ...while the helper ran 40 ms for it: the rest was its wait for the CPU.
      assert.equal(out.details.capturing, true, show(out));
      assert.equal(out.details.armings, 0, show(out));
    });

    for (const load of ['nothing', 'a busy process on CPU 1']) {
      for (const scenario of ['spin', 'sleep', 'wait', 'helper400']) {
        it(`starts at the app's block "${scenario}" with ${load}`, async () => {
          const stop = load === 'nothing' ? () => {} : busy(1, 1);
          let out;
          try {
            out = await run(scenario);
          } finally {
            stop();
          }
          assert.equal(out.facts.before, 0, show(out));
          assert.ok(out.facts.blockMs >= 290, show(out));
          assert.equal(out.details.armings, 1, show(out));
        });
      }
    }
  });
});
