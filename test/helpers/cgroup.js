'use strict';

// The mocha side of support/cgroup.js: skip (or, in CI, fail) a suite that needs a cgroup with a
// writable cpu controller where there is none, saying why.

const os = require('os');
const { spawn } = require('child_process');
const cgroup = require('../../support/cgroup');
const { ROOT, FIXTURES, cleanEnv, runNode, lastJson } = require('./child');

let warned = false;

/**
 * Skips the current mocha test/suite when no CPU quota can be set here; in CI (process.env.CI
 * set) throws instead, so missing coverage is never silent.
 * @param {import('mocha').Context} mochaContext `this` of a mocha hook or test
 */
function requireCgroup(mochaContext) {
  const support = cgroup.cgroupSupport();
  if (support.ok) return;
  if (process.env.CI) throw new Error(`A cgroup with a writable cpu controller is required in CI (CI=${process.env.CI}): ${support.reason}`);
  if (!warned) {
    warned = true;
    console.warn(`[uvscope tests] skipping the CPU quota tests: ${support.reason}`);
  }
  mochaContext.skip();
}

/**
 * Run test/fixtures/cpu-burn-app.js in a new cgroup with a quota of `cpus` CPUs; resolve its
 * JSON line and the cgroup's own cpu.stat read after it exited. Removes the cgroup.
 * @param {number} cpus
 * @param {Record<string, string>} env SECONDS_TO_RUN, LOOP_BURN_MS, LOOP_PAUSE_MS, POOL_JOBS
 */
async function runUnderQuota(cpus, env) {
  const cg = cgroup.createCpuCgroup({ cpus });
  try {
    const child = cg.spawn(process.execPath, [`${FIXTURES}/cpu-burn-app.js`], { cwd: ROOT, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => process.kill(child.pid, 'SIGKILL'), 60000);
    const code = await new Promise((resolve) => child.on('close', resolve));
    clearTimeout(timer);
    if (code !== 0) throw new Error(`cpu-burn-app exited ${code}: ${stderr}`);
    return { app: lastJson(stdout), stat: cg.stat(), quotaCpus: cg.quotaCpus, version: cg.version };
  } finally {
    await cg.remove();
  }
}

/**
 * Run test/fixtures/cpu-burn-app.js in this process's own cgroup (no quota), optionally pinned
 * with `taskset -c <cpus>`.
 * @param {Record<string, string>} env
 * @param {string} [pin] a CPU list for taskset
 */
async function runWithoutQuota(env, pin) {
  const args = [`${FIXTURES}/cpu-burn-app.js`];
  const r = pin
    ? await runNode(['-c', pin, process.execPath, ...args], { env, command: 'taskset' })
    : await runNode(args, { env });
  if (r.code !== 0) throw new Error(`cpu-burn-app exited ${r.code}: ${r.stderr}`);
  return lastJson(r.stdout);
}

/**
 * Spawn a child in a cgroup of ten times the default CPU weight whose quota is the host's CPUs,
 * where one can be made (else as child_process.spawn does): next to other sessions' load it gets
 * the CPU it wants (nice counts only within a session). For apps whose findings need their own
 * CPU work to show, not the machine's. The cgroup is removed once the child has exited.
 * @param {string} command
 * @param {string[]} args
 * @param {import('node:child_process').SpawnOptions} options
 */
function spawnWeighted(command, args, options) {
  if (!cgroup.cgroupSupport().ok) return spawn(command, args, options);
  const cg = cgroup.createCpuCgroup({ cpus: os.availableParallelism(), name: 'uvscope-test-weighted' });
  const child = cg.spawn(command, args, options);
  // At once where the kernel has emptied it (mocha's exit: true may end this process before a
  // retry's timer), else retried.
  child.once('close', () => {
    try {
      require('fs').rmdirSync(cg.dir);
    } catch {
      cg.remove().catch(() => {});
    }
  });
  return child;
}

module.exports = { ...cgroup, requireCgroup, runUnderQuota, runWithoutQuota, spawnWeighted };
