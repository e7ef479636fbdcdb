'use strict';

// Children under a CPU quota: a cgroup of their own with a cpu controller the test (or the lab)
// writes, v2 where the cpu controller is on the unified hierarchy, else v1. Shared by the tests
// (test/sources/cpu-budget.test.js, test/findings/cpu-throttled.test.js) and the incident lab
// (examples/incidents/throttled.js). Needs root; the cgroup is removed once its processes exited.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { parseMountinfo, parseCpuStat } = require('../lib/sources/cpu-budget');

let cached = null;

/**
 * Whether a CPU quota can be set here, on which hierarchy, and if not, why.
 * @returns {{ ok: true, version: 'cgroup-v2'|'cgroup-v1', mount: string } | { ok: false, reason: string }}
 */
function cgroupSupport() {
  if (cached) return cached;
  cached = probe();
  return cached;
}

function probe() {
  if (process.platform !== 'linux') return { ok: false, reason: `cgroups are Linux only (this is ${process.platform})` };
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return { ok: false, reason: 'making a cgroup needs root' };
  let mounts;
  try {
    mounts = parseMountinfo(fs.readFileSync('/proc/self/mountinfo', 'utf8'));
  } catch (err) {
    return { ok: false, reason: `cannot read /proc/self/mountinfo (${err.code || err.message})` };
  }
  const v2 = mounts.find((m) => m.type === 'cgroup2' && m.root === '/' && controllers(m.mountPoint).includes('cpu'));
  const v1 = mounts.find((m) => m.type === 'cgroup' && m.root === '/' && m.controllers.includes('cpu'));
  const mount = v2 ? v2.mountPoint : v1 ? v1.mountPoint : null;
  if (!mount) return { ok: false, reason: 'no cgroup hierarchy with the cpu controller is mounted' };
  const version = v2 ? 'cgroup-v2' : 'cgroup-v1';
  const dir = path.join(mount, `uvscope-probe-${process.pid}`);
  try {
    if (v2) enableCpu(mount);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, version === 'cgroup-v2' ? 'cpu.max' : 'cpu.cfs_quota_us'), version === 'cgroup-v2' ? '50000 100000' : '50000');
  } catch (err) {
    return { ok: false, reason: `the cpu controller at ${mount} is not writable (${err.code || err.message})` };
  } finally {
    try {
      fs.rmdirSync(dir);
    } catch {
      // not made
    }
  }
  return { ok: true, version, mount };
}

function controllers(mount) {
  try {
    return fs.readFileSync(path.join(mount, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
  } catch {
    return [];
  }
}

// v2: a child cgroup has cpu.max only when its parent delegates the cpu controller to children.
function enableCpu(mount) {
  const control = path.join(mount, 'cgroup.subtree_control');
  if (!fs.readFileSync(control, 'utf8').split(/\s+/).includes('cpu')) fs.writeFileSync(control, '+cpu');
}

/**
 * Make a cgroup with a CPU quota. Throws where cgroupSupport() is not ok.
 * @param {{ cpus: number, periodUs?: number, name?: string, nice?: number }} options cpus: the
 *   quota in CPUs; nice: the children's nice value (-10: the quota caps what they take, while on a
 *   loaded machine, a CI runner or other tests, a child at the default priority may not even
 *   reach its quota, and then there is no throttling to see)
 */
function createCpuCgroup({ cpus, periodUs = 100000, name = 'uvscope-test', nice = -10 }) {
  const support = cgroupSupport();
  if (!support.ok) throw new Error(support.reason);
  const dir = path.join(support.mount, `${name}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
  fs.mkdirSync(dir);
  const quotaUs = Math.round(cpus * periodUs);
  if (support.version === 'cgroup-v2') {
    fs.writeFileSync(path.join(dir, 'cpu.max'), `${quotaUs} ${periodUs}`);
  } else {
    fs.writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(periodUs));
    fs.writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(quotaUs));
  }
  return {
    dir,
    version: support.version,
    quotaCpus: quotaUs / periodUs,
    /** The cgroup's own cpu.stat: periods, throttled periods, throttled seconds. */
    stat: () => parseCpuStat(fs.readFileSync(path.join(dir, 'cpu.stat'), 'utf8')),
    /**
     * Spawn a command whose process joins this cgroup before it execs (its threads are born in
     * it), at the cgroup's nice value whatever this process's own (tests run niced).
     * @param {string} command
     * @param {string[]} args
     * @param {import('node:child_process').SpawnOptions} options
     */
    spawn: (command, args, options) => spawn('sh', ['-c', `echo $$ > "${path.join(dir, 'cgroup.procs')}" && exec nice -n ${nice - os.getPriority()} "$0" "$@"`, command, ...args], options),
    /** Remove the cgroup once its processes have exited (the kernel may take a moment to empty it). */
    async remove() {
      for (let i = 0; i < 50; i++) {
        try {
          fs.rmdirSync(dir);
          return;
        } catch (err) {
          if (err.code === 'ENOENT') return;
          if (err.code !== 'EBUSY') throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      throw new Error(`${dir} still busy after 5 s`);
    },
  };
}

module.exports = { cgroupSupport, createCpuCgroup };
