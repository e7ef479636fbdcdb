'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');
const { runNode, ROOT } = require('../helpers/child');
const { cgroupSupport, createCpuCgroup, requireCgroup } = require('../helpers/cgroup');

describe('support/cgroup: real cgroups with a CPU quota for the tests and the lab', function () {
  this.timeout(30000);

  it('makes a cgroup with the quota asked for, runs a child in it, and removes it after the child exits', async function () {
    requireCgroup(this);
    const cg = createCpuCgroup({ cpus: 0.25 });
    const file = cg.version === 'cgroup-v2' ? 'cpu.max' : 'cpu.cfs_quota_us';
    assert.match(fs.readFileSync(`${cg.dir}/${file}`, 'utf8'), cg.version === 'cgroup-v2' ? /^25000 100000/ : /^25000/);
    // Ten times the default weight: it reaches its quota next to others' load.
    assert.equal(fs.readFileSync(`${cg.dir}/${cg.version === 'cgroup-v2' ? 'cpu.weight' : 'cpu.shares'}`, 'utf8').trim(), cg.version === 'cgroup-v2' ? '1000' : '10240');
    const child = cg.spawn(process.execPath, ['-e', 'console.log(require("fs").readFileSync("/proc/self/cgroup", "utf8"))'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    await new Promise((r) => child.on('close', r));
    assert.ok(out.includes(cg.dir.split('/').pop()), `the child's /proc/self/cgroup names its cgroup: ${out}`);
    await cg.remove();
    assert.equal(fs.existsSync(cg.dir), false);
  });

  it('without root: says so, and the lab\'s throttled incident prints that it skips and why', async function () {
    if (process.platform !== 'linux' || process.getuid() !== 0 || !fs.existsSync('/usr/bin/setpriv')) this.skip(); // dropping to nobody needs root and setpriv
    const r = await runNode(['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', `
      const { cgroupSupport } = require(${JSON.stringify(ROOT + '/support/cgroup')});
      console.log(JSON.stringify(cgroupSupport()));
      require(${JSON.stringify(ROOT + '/examples/incidents/throttled')}).run().then((r) => console.log(JSON.stringify(r)));
    `], { command: 'setpriv' });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.deepEqual(JSON.parse(lines[0]), { ok: false, reason: 'making a cgroup needs root' });
    assert.match(r.stdout, /skipped: making a cgroup needs root \(this incident makes a cgroup with a CPU quota/);
    assert.deepEqual(JSON.parse(lines[lines.length - 1]), { skipped: 'making a cgroup needs root' });
    assert.equal(typeof cgroupSupport().ok, 'boolean');
  });
});
