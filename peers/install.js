'use strict';

// Installs peers/ (dd-trace 6, the OpenTelemetry SDK 3 line, @prometheus-io/client) with
// `npm ci` when this Node runs them (22+) and peers/node_modules is missing or older than
// peers/package-lock.json. `npm test` runs it first (pretest); the benches that compare with
// those peers need it too (`node peers/install.js`, or `npm ci --prefix peers`). They stay out
// of the root's install because they declare Node 22.15+: on Node 20 npm would print an engine
// warning for each of them, and the tests there use the root's older lines (support/peers.js).

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

const PEERS = __dirname;
const LOCK = path.join(PEERS, 'package-lock.json');
const INSTALLED = path.join(PEERS, 'node_modules', '.package-lock.json');

/** @returns {boolean} whether peers/node_modules was installed from the current lockfile */
function upToDate() {
  try {
    return fs.statSync(INSTALLED).mtimeMs >= fs.statSync(LOCK).mtimeMs;
  } catch {
    return false;
  }
}

function main() {
  if (Number(process.versions.node.split('.')[0]) < 22) return 0;
  if (upToDate()) return 0;
  console.log(`[uvscope] npm ci in peers/ (dd-trace 6, OpenTelemetry SDK 3, @prometheus-io/client for the tests on Node ${process.versions.node})`);
  // Run as from a shell in peers/: the npm_* variables of the `npm test` that started this
  // would point npm at the root project.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  const npm = process.env.npm_execpath;
  const r = npm
    ? spawnSync(process.execPath, [npm, 'ci', '--no-audit', '--no-fund'], { cwd: PEERS, env, stdio: 'inherit' })
    : spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: PEERS, env, stdio: 'inherit' });
  if (r.error) console.error(`[uvscope] npm ci in peers/ failed to start: ${r.error.message}`);
  return r.status ?? 1;
}

process.exitCode = main();
