'use strict';

// What the README tells a newcomer to run, and what a plain install prints: the commands are
// package.json's scripts and CI's, a plain install carries no package that declares a newer Node
// than the one installing (peers/ holds those), and every install script is approved or denied.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..');
const read = (file) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const json = (file) => JSON.parse(read(file));
const major = Number(process.versions.node.split('.')[0]);

describe('README: the commands a newcomer runs', function () {
  const readme = read('README.md');
  const pkg = json('package.json');

  it('shows how to install the package, run the lab and run the tests, each a script of package.json', () => {
    assert.match(readme, /^npm install uvscope$/m);
    assert.match(readme, /^npm install && npm start\b/m);
    assert.match(readme, /^npm test\b/m);
    assert.ok(pkg.scripts.start, 'npm start');
    assert.ok(pkg.scripts.test, 'npm test');
  });

  it('CI runs the README\'s test command', () => {
    assert.match(read('.ci/run'), /npm test 2>&1/);
  });

  it('names the Node majors package.json accepts', () => {
    assert.equal(pkg.engines.node, '>=20');
    assert.match(readme, /Node\.js 20, 22, 24 and 26/);
  });
});

describe('a plain npm install: nothing to puzzle over', function () {
  const pkg = json('package.json');
  const peers = json('peers/package.json');

  it('keeps peers/ (packages that need Node 22+) out: no workspace, no peers/ package among the root\'s', () => {
    assert.equal(pkg.workspaces, undefined);
    const root = { ...pkg.dependencies, ...pkg.devDependencies, ...pkg.optionalDependencies };
    assert.equal(root['@prometheus-io/client'], undefined, '@prometheus-io/client declares node ^22 || ^24 || >=26');
    assert.ok(peers.dependencies['@prometheus-io/client']);
    const lock = json('package-lock.json');
    assert.ok(!Object.keys(lock.packages).some((k) => k.startsWith('peers')), 'the root lockfile holds no peers/ entry');
  });

  it('approves or denies every install script of both lockfiles (npm 11 prints a notice for the others)', () => {
    for (const dir of ['.', 'peers']) {
      const lock = json(path.join(dir, 'package-lock.json'));
      const allow = json(path.join(dir, 'package.json')).allowScripts || {};
      const scripted = Object.entries(lock.packages)
        .filter(([, p]) => p.hasInstallScript)
        .map(([k]) => k.slice(k.lastIndexOf('node_modules/') + 'node_modules/'.length));
      for (const name of scripted) assert.equal(typeof allow[name], 'boolean', `${dir}: ${name}`);
    }
  });

  it('peers/install.js: nothing on Node 20; on Node 22+ peers/ is installed from its lockfile (npm test\'s pretest)', function () {
    assert.equal(json('package.json').scripts.pretest, 'node peers/install.js');
    if (major < 22) {
      const r = spawnSync(process.execPath, [path.join(ROOT, 'peers', 'install.js')], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout + r.stderr, '');
    } else {
      const installed = fs.statSync(path.join(ROOT, 'peers', 'node_modules', '.package-lock.json')).mtimeMs;
      assert.ok(installed >= fs.statSync(path.join(ROOT, 'peers', 'package-lock.json')).mtimeMs);
    }
  });
});
