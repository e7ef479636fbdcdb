'use strict';

const assert = require('node:assert/strict');
const os = require('os');
const path = require('path');
const { createCpuBudget, discover, parseCgroupFile, parseMountinfo, parseCpuMax, parseCpuStat, parseCpuList, cgroupDir } = require('../../lib/sources/cpu-budget');
const { runWithoutQuota } = require('../helpers/cgroup');

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'cgroup');
const tree = (name) => createCpuBudget({ root: path.join(FIXTURES, name) });
const under = (name, p) => path.join(FIXTURES, name, p);

describe('sources/cpu-budget', function () {
  describe('parsers', () => {
    it('reads /proc/self/cgroup lines: v2 (0::), v1 with comma-joined controllers, named hierarchies', () => {
      assert.deepEqual(parseCgroupFile('12:pids:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/x\n0::/\n'), [
        { id: '12', controllers: ['pids'], path: '/docker/abc' },
        { id: '4', controllers: ['cpu', 'cpuacct'], path: '/docker/abc' },
        { id: '1', controllers: ['name=systemd'], path: '/x' },
        { id: '0', controllers: [], path: '/' },
      ]);
    });

    it('reads cgroup mounts from mountinfo (root, mount point, v1 controllers from the super options), skipping the rest', () => {
      const m = parseMountinfo([
        '25 30 0:22 / /proc rw,nosuid - proc proc rw',
        '33 30 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:14 - cgroup cgroup rw,cpu,cpuacct',
        '40 30 0:30 /docker/0123 /sys/fs/cgroup/with\\040space ro - cgroup cgroup rw,cpuacct,cpu',
        '31 30 0:28 / /sys/fs/cgroup/unified rw shared:10 - cgroup2 cgroup2 rw,nsdelegate',
      ].join('\n'));
      assert.deepEqual(m, [
        { root: '/', mountPoint: '/sys/fs/cgroup/cpu,cpuacct', type: 'cgroup', controllers: ['rw', 'cpu', 'cpuacct'] },
        { root: '/docker/0123', mountPoint: '/sys/fs/cgroup/with space', type: 'cgroup', controllers: ['rw', 'cpuacct', 'cpu'] },
        { root: '/', mountPoint: '/sys/fs/cgroup/unified', type: 'cgroup2', controllers: [] },
      ]);
    });

    it('cpu.max: quota over period, "max" is no quota', () => {
      assert.equal(parseCpuMax('50000 100000\n'), 0.5);
      assert.equal(parseCpuMax('250000 100000'), 2.5);
      assert.equal(parseCpuMax('max 100000'), null);
      assert.equal(parseCpuMax(''), null);
    });

    it('cpu.stat: v2 throttled_usec and v1 throttled_time (ns) in seconds; none without nr_periods', () => {
      assert.deepEqual(parseCpuStat('usage_usec 5\nnr_periods 1200\nnr_throttled 300\nthrottled_usec 45000000\n'), { periods: 1200, throttledPeriods: 300, throttledSeconds: 45 });
      assert.deepEqual(parseCpuStat('nr_periods 152\nnr_throttled 150\nthrottled_time 7480000000\nnr_bursts 0\n'), { periods: 152, throttledPeriods: 150, throttledSeconds: 7.48 });
      assert.equal(parseCpuStat('usage_usec 900\nuser_usec 500\nsystem_usec 400\n'), null);
    });

    it('CPU lists: ranges and singles', () => {
      assert.equal(parseCpuList('0-3'), 4);
      assert.equal(parseCpuList('0-1,4-5'), 4);
      assert.equal(parseCpuList('0'), 1);
      assert.equal(parseCpuList('0,2,7-9'), 5);
      assert.equal(parseCpuList('garbage'), null);
    });

    it('a cgroup path under a mount: whole hierarchy, the mount is the cgroup (namespace), a path below the mount\'s root', () => {
      assert.equal(cgroupDir({ root: '/', mountPoint: '/m' }, '/a/b'), '/m/a/b');
      assert.equal(cgroupDir({ root: '/a/b', mountPoint: '/m' }, '/a/b'), '/m');
      assert.equal(cgroupDir({ root: '/a', mountPoint: '/m' }, '/a/b/c'), '/m/b/c');
      assert.equal(cgroupDir({ root: '/docker/x', mountPoint: '/m' }, '/'), '/m');
    });
  });

  describe('fixture trees', () => {
    it('v2: the pod\'s 1.5 CPU quota binds (its container has "max"), its cpu.stat in seconds', () => {
      const b = tree('v2');
      const budget = b.read();
      assert.deepEqual(budget, { cpus: 1.5, quotaCpus: 1.5, affinityCpus: 4, source: 'cgroup-v2', statPath: under('v2', 'sys/fs/cgroup/kubepods.slice/pod1/cpu.stat') });
      assert.deepEqual(b.stat(budget), { periods: 1200, throttledPeriods: 300, throttledSeconds: 45 });
    });

    it('v1 in a hybrid setup (v2 mounted without the cpu controller): 50000 of 100000 us = 0.5 CPU of a 2-CPU mask', () => {
      const b = tree('v1');
      assert.deepEqual(discover({ root: path.join(FIXTURES, 'v1') }).version, 'cgroup-v1');
      const budget = b.read();
      assert.deepEqual(budget, { cpus: 0.5, quotaCpus: 0.5, affinityCpus: 2, source: 'cgroup-v1', statPath: under('v1', 'sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.stat') });
      assert.deepEqual(b.stat(budget), { periods: 152, throttledPeriods: 150, throttledSeconds: 7.48 });
    });

    it('v1 nested: the parent\'s 25000/50000 (0.5) wins over the container\'s 2 CPUs, and its cpu.stat is the one read', () => {
      const b = tree('v1-nested');
      const budget = b.read();
      assert.equal(budget.cpus, 0.5);
      assert.equal(budget.affinityCpus, 8);
      assert.equal(budget.statPath, under('v1-nested', 'sys/fs/cgroup/cpu/kubepods/burstable/pod7/cpu.stat'));
      assert.deepEqual(b.stat(budget), { periods: 40, throttledPeriods: 10, throttledSeconds: 0.5 });
    });

    it('v1 in a cgroup namespace (the mount shows the container\'s own cgroup): a 3 CPU quota with a 1-CPU mask is a budget of 1, from the affinity', () => {
      const budget = tree('v1-ns').read();
      assert.deepEqual(budget, { cpus: 1, quotaCpus: 3, affinityCpus: 1, source: 'affinity', statPath: under('v1-ns', 'sys/fs/cgroup/cpu,cpuacct/cpu.stat') });
    });

    it('v2 with "max" at every level: no quota, the affinity mask (0-1,4-5 = 4), no cpu.stat', () => {
      const b = tree('v2-max');
      const budget = b.read();
      assert.deepEqual(budget, { cpus: 4, quotaCpus: null, affinityCpus: 4, source: 'affinity', statPath: null });
      assert.equal(b.stat(budget), null);
    });

    it('the budget is read again once a minute has passed (a limit changed at run time), the counters at every call', () => {
      const files = new Map();
      const base = path.join(FIXTURES, 'v1');
      const readFile = (p) => (files.has(p) ? files.get(p) : require('fs').readFileSync(p, 'utf8'));
      let t = 1000;
      const b = createCpuBudget({ root: base, readFile, now: () => t });
      const quota = path.join(base, 'sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us');
      const stat = path.join(base, 'sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.stat');
      assert.equal(b.read().cpus, 0.5);
      files.set(quota, '150000');
      files.set(stat, 'nr_periods 153\nnr_throttled 151\nthrottled_time 7490000000\n');
      t += 59999;
      assert.equal(b.read().cpus, 0.5, 'within the minute: the same figures');
      assert.deepEqual(b.stat(), { periods: 153, throttledPeriods: 151, throttledSeconds: 7.49 });
      t += 1;
      assert.deepEqual(b.read(), { cpus: 1.5, quotaCpus: 1.5, affinityCpus: 2, source: 'cgroup-v1', statPath: stat });
    });

    it('no /proc at all: what Node knows, no quota, never a throw', () => {
      const b = createCpuBudget({ root: path.join(FIXTURES, 'does-not-exist') });
      const n = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
      assert.deepEqual(b.read(), { cpus: n, quotaCpus: null, affinityCpus: n, source: 'affinity', statPath: null });
      assert.equal(b.stat(), null);
      const failing = createCpuBudget({ readFile: () => { throw new Error('EIO'); } });
      assert.equal(failing.read().quotaCpus, null);
    });
  });

  describe('this machine, without a quota', function () {
    this.timeout(30000);
    it('the budget is the affinity mask: all CPUs, and 1 under taskset -c 0; no container.cpu.* metrics', async function () {
      if (process.platform !== 'linux') this.skip();
      const free = await runWithoutQuota({ SECONDS_TO_RUN: '0.5' });
      const pinned = await runWithoutQuota({ SECONDS_TO_RUN: '0.5' }, '0');
      const mask = parseCpuList(require('fs').readFileSync('/proc/self/status', 'utf8').match(/Cpus_allowed_list:\s*(\S+)/)[1]);
      for (const [r, n] of [[free, mask], [pinned, 1]]) {
        assert.equal(r.cpu.quotaCpus, null, 'this test runs outside any CPU quota');
        assert.equal(r.budget.value, n);
        assert.equal(r.budget.attributes['process.cpu.budget.source'], 'affinity');
        assert.equal(r.periods, null);
        assert.equal(r.throttledPeriods, null);
        assert.equal(r.throttledTime, null);
      }
    });
  });
});
