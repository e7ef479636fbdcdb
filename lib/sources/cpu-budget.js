'use strict';

// The cgroup reader that lib/sources/cpu.js samples: the CPUs this process may use, the cgroup
// CPU quota (a container's CPU limit) and the affinity mask, whichever is smaller.
// os.availableParallelism() counts the affinity mask (Node 20's libuv ignores cgroup quotas), so
// advice sized to it would count a host's cores in a 0.5 CPU container.
//
// Where the quota is: /proc/self/cgroup gives the process's cgroup per hierarchy (`0::<path>` for
// cgroup v2, `<id>:cpu,cpuacct:<path>` for v1) and /proc/self/mountinfo where that hierarchy is
// mounted (and which part of it the mount shows: in a container the mount's root is often the
// container's own cgroup). The kernel enforces the quota of every level from the cgroup up to the
// root, so the smallest quota along the path wins; its cpu.stat counts the periods and throttling.
// Discovery reads those two files once. The budget (the quota files of each level and the affinity
// line of /proc/self/status, ~30 us a file on a slow VM) is read again at most once a minute, so a
// limit changed at run time shows within a minute; only the throttling counters (one cpu.stat) are
// read at every sample. Nothing here throws: without /proc (not Linux) the budget is
// os.availableParallelism() with no quota.

const fs = require('fs');
const os = require('os');
const path = require('path');

/**
 * @typedef {object} CpuBudget
 * @property {number} cpus the budget: the smaller of quotaCpus and affinityCpus
 * @property {number|null} quotaCpus the cgroup CPU quota in CPUs (quota / period), null without one
 * @property {number} affinityCpus CPUs in the affinity mask
 * @property {'cgroup-v2'|'cgroup-v1'|'affinity'} source where `cpus` comes from
 * @property {string|null} statPath the cpu.stat of the cgroup whose quota binds, null without one
 */

/**
 * @typedef {object} CpuStat
 * @property {number} periods enforcement periods elapsed (nr_periods)
 * @property {number} throttledPeriods periods in which the cgroup was throttled (nr_throttled)
 * @property {number} throttledSeconds time its threads were throttled
 */

/**
 * The lines of /proc/self/cgroup: hierarchy id, controllers and path.
 * @param {string} text
 * @returns {{ id: string, controllers: string[], path: string }[]}
 */
function parseCgroupFile(text) {
  const out = [];
  for (const line of String(text).split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (m) out.push({ id: m[1], controllers: m[2] ? m[2].split(',') : [], path: m[3] });
  }
  return out;
}

/**
 * The cgroup mounts of /proc/self/mountinfo: root (the part of the hierarchy shown), mount point,
 * filesystem type and, for v1, the controllers in its super options.
 * @param {string} text
 * @returns {{ root: string, mountPoint: string, type: string, controllers: string[] }[]}
 */
function parseMountinfo(text) {
  const out = [];
  for (const line of String(text).split('\n')) {
    const dash = line.indexOf(' - ');
    if (dash < 0) continue;
    const before = line.slice(0, dash).split(' ');
    const after = line.slice(dash + 3).split(' ');
    const type = after[0];
    if (type !== 'cgroup' && type !== 'cgroup2') continue;
    const unescape = (s) => s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
    out.push({ root: unescape(before[3]), mountPoint: unescape(before[4]), type, controllers: type === 'cgroup' ? (after[2] || '').split(',') : [] });
  }
  return out;
}

/**
 * A cgroup v2 cpu.max ("<quota> <period>", quota "max" for none) in CPUs, or null for none.
 * @param {string} text
 */
function parseCpuMax(text) {
  const [quota, period] = String(text).trim().split(/\s+/);
  return cpus(quota === 'max' ? -1 : Number(quota), Number(period || 100000));
}

/**
 * A v1 quota (cpu.cfs_quota_us, -1 for none) over its period (cpu.cfs_period_us) in CPUs, or null.
 * @param {number} quotaUs
 * @param {number} periodUs
 */
function cpus(quotaUs, periodUs) {
  return Number.isFinite(quotaUs) && quotaUs > 0 && Number.isFinite(periodUs) && periodUs > 0 ? quotaUs / periodUs : null;
}

/**
 * A cpu.stat's throttling figures: v2 (nr_periods, nr_throttled, throttled_usec) or v1
 * (nr_periods, nr_throttled, throttled_time in ns); null when it has none (v2 without the cpu
 * controller lists only usage).
 * @param {string} text
 * @returns {CpuStat|null}
 */
function parseCpuStat(text) {
  const f = {};
  for (const line of String(text).split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined) f[k] = Number(v);
  }
  if (!Number.isFinite(f.nr_periods) || !Number.isFinite(f.nr_throttled)) return null;
  const seconds = Number.isFinite(f.throttled_usec) ? f.throttled_usec / 1e6 : Number.isFinite(f.throttled_time) ? f.throttled_time / 1e9 : 0;
  return { periods: f.nr_periods, throttledPeriods: f.nr_throttled, throttledSeconds: seconds };
}

/**
 * The number of CPUs in a CPU list such as /proc/self/status Cpus_allowed_list ("0-3,6"), or null.
 * @param {string} list
 */
function parseCpuList(list) {
  let n = 0;
  for (const part of String(list).trim().split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) return null;
    n += m[2] === undefined ? 1 : Number(m[2]) - Number(m[1]) + 1;
  }
  return n > 0 ? n : null;
}

/**
 * The directory of a cgroup path under a mount that shows `root` of the hierarchy, or null.
 * @param {{ root: string, mountPoint: string }} mount
 * @param {string} cgroupPath
 */
function cgroupDir(mount, cgroupPath) {
  if (mount.root === '/') return path.join(mount.mountPoint, cgroupPath);
  if (cgroupPath === mount.root) return mount.mountPoint;
  if (cgroupPath.startsWith(mount.root + '/')) return path.join(mount.mountPoint, cgroupPath.slice(mount.root.length));
  // A container without a cgroup namespace sees the host's path and its own cgroup mounted: the mount is the cgroup.
  return mount.mountPoint;
}

/** The directories from a cgroup up to its mount point, leaf first. */
function levels(dir, mountPoint) {
  const out = [dir];
  let d = dir;
  while (d !== mountPoint && d.startsWith(mountPoint + '/')) {
    d = path.dirname(d);
    out.push(d);
  }
  return out;
}

/**
 * Where this process's CPU quota lives: the cgroup levels to read, leaf first, and how. Reads
 * /proc/self/cgroup and /proc/self/mountinfo under `root` ('/' on a live system; a fixture tree
 * in tests, whose mount points are then taken under it too).
 * @param {{ root?: string, readFile?: (p: string) => string }} [opts]
 * @returns {{ version: 'cgroup-v2'|'cgroup-v1', dirs: string[] }|null}
 */
function discover(opts = {}) {
  const root = opts.root || '/';
  const read = opts.readFile || ((p) => fs.readFileSync(p, 'utf8'));
  let groups;
  let mounts;
  try {
    groups = parseCgroupFile(read(path.join(root, 'proc/self/cgroup')));
    mounts = parseMountinfo(read(path.join(root, 'proc/self/mountinfo')));
  } catch {
    return null;
  }
  const under = (m) => ({ ...m, mountPoint: path.join(root, m.mountPoint) });
  const exists = (p) => {
    try {
      read(p);
      return true;
    } catch {
      return false;
    }
  };
  // v2 first: with the cpu controller enabled there, its cpu.max exists (in a hybrid setup whose
  // cpu controller is on v1 it does not, and the v1 line applies).
  const v2 = groups.find((g) => g.id === '0' && g.controllers.length === 0);
  const v2Mount = mounts.find((m) => m.type === 'cgroup2');
  if (v2 && v2Mount) {
    const m = under(v2Mount);
    const dirs = levels(cgroupDir(m, v2.path), m.mountPoint);
    if (dirs.some((d) => exists(path.join(d, 'cpu.max')))) return { version: 'cgroup-v2', dirs };
  }
  const v1 = groups.find((g) => g.controllers.includes('cpu'));
  const v1Mount = mounts.find((m) => m.type === 'cgroup' && m.controllers.includes('cpu'));
  if (v1 && v1Mount) {
    const m = under(v1Mount);
    return { version: 'cgroup-v1', dirs: levels(cgroupDir(m, v1.path), m.mountPoint) };
  }
  return null;
}

/**
 * The smallest quota along the levels, with the cpu.stat of its level; null when none has one.
 * @param {{ version: string, dirs: string[] }} found
 * @param {(p: string) => string} read
 * @returns {{ quotaCpus: number, statPath: string }|null}
 */
function readQuota(found, read) {
  let best = null;
  for (const d of found.dirs) {
    let q = null;
    try {
      q = found.version === 'cgroup-v2'
        ? parseCpuMax(read(path.join(d, 'cpu.max')))
        : cpus(Number(read(path.join(d, 'cpu.cfs_quota_us'))), Number(read(path.join(d, 'cpu.cfs_period_us'))));
    } catch {
      // a level without the file (the v2 root has no cpu.max): no quota there
    }
    if (q !== null && (!best || q < best.quotaCpus)) best = { quotaCpus: q, statPath: path.join(d, 'cpu.stat') };
  }
  return best;
}

/**
 * The CPUs in this process's affinity mask: /proc/self/status Cpus_allowed_list (what the
 * scheduler allows the main thread), else os.availableParallelism().
 * @param {string} root
 * @param {(p: string) => string} read
 */
function affinity(root, read) {
  try {
    const m = /^Cpus_allowed_list:\s*(\S+)/m.exec(read(path.join(root, 'proc/self/status')));
    const n = m && parseCpuList(m[1]);
    if (n) return n;
  } catch {
    // no /proc: what Node knows
  }
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : Math.max(1, os.cpus().length);
}

/**
 * A reader of this process's CPU budget: discovery once (where the quota lives); read() reads the
 * quota and affinity again once refreshMs has passed since it last did (a few small reads), else
 * returns the same figures; stat() reads the cpu.stat. Never throws.
 * @param {{ root?: string, readFile?: (p: string) => string, refreshMs?: number, now?: () => number }} [opts]
 *   root: a fixture tree (tests); refreshMs: how long a budget read stands (60 s; 0: every call)
 * @returns {{ read(): CpuBudget, stat(budget?: CpuBudget): CpuStat|null }}
 */
function createCpuBudget(opts = {}) {
  const root = opts.root || '/';
  const readFile = opts.readFile || ((p) => fs.readFileSync(p, 'utf8'));
  const refreshMs = opts.refreshMs === undefined ? 60000 : opts.refreshMs;
  const now = opts.now || Date.now;
  let cached = null;
  let cachedAt = 0;
  let found;
  try {
    found = discover({ root, readFile });
  } catch {
    found = null;
  }
  /** @returns {CpuBudget} */
  const fresh = () => {
    const affinityCpus = affinity(root, readFile);
    let q;
    try {
      q = found && readQuota(found, readFile);
    } catch {
      q = null;
    }
    if (!q) return { cpus: affinityCpus, quotaCpus: null, affinityCpus, source: 'affinity', statPath: null };
    const byQuota = q.quotaCpus <= affinityCpus;
    return {
      cpus: byQuota ? q.quotaCpus : affinityCpus,
      quotaCpus: q.quotaCpus,
      affinityCpus,
      source: byQuota ? /** @type {'cgroup-v2'|'cgroup-v1'} */ (found.version) : 'affinity',
      statPath: q.statPath,
    };
  };
  /** @returns {CpuBudget} */
  const read = () => {
    const t = now();
    if (!cached || t - cachedAt >= refreshMs || t < cachedAt) {
      cached = Object.freeze(fresh());
      cachedAt = t;
    }
    return cached;
  };
  return {
    read,
    stat(budget = read()) {
      if (!budget.statPath) return null;
      try {
        return parseCpuStat(readFile(budget.statPath));
      } catch {
        return null;
      }
    },
  };
}

module.exports = { createCpuBudget, discover, parseCgroupFile, parseMountinfo, parseCpuMax, parseCpuStat, parseCpuList, cgroupDir };
