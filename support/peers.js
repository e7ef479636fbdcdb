'use strict';

// Which line of each peer the companion tests and bench/peers.js run with on this Node: the newest line where it
// runs (dd-trace 6 on Node 22+, the OpenTelemetry SDK 3 line on Node 22.15+, both from the
// workspace peers/, whose own @opentelemetry/api 1.10 SDK 3 needs), else the older line from the
// root devDependencies (dd-trace 5, SDK 2 with sdk-node 0.2xx). CI runs every Node major, so both
// lines are tested there.

const path = require('path');
const { createRequire } = require('module');

const ROOT = path.resolve(__dirname, '..');
const PEERS = path.join(ROOT, 'peers');

const [major, minor] = process.versions.node.split('.').map(Number);
const newest = major > 22 || (major === 22 && minor >= 15);

/** require() as from the root (older lines) or from peers/ (newest lines). */
const requireFrom = (dir) => createRequire(path.join(dir, 'package.json'));

const ddTraceDir = major >= 22 ? PEERS : ROOT;
const otelDir = newest ? PEERS : ROOT;
const requireDdTrace = requireFrom(ddTraceDir);
const requireOtel = requireFrom(otelDir);

module.exports = {
  /** @returns {number} the dd-trace major tested on this Node */
  ddTraceMajor: () => Number(requireDdTrace('dd-trace/package.json').version.split('.')[0]),
  /** dd-trace's init.js for `--require`, of the line tested on this Node. */
  ddTraceInit: path.join(ddTraceDir, 'node_modules', 'dd-trace', 'init.js'),
  /** require() for @opentelemetry/* packages of the line tested on this Node. */
  requireOtel,
  /** @returns {number} the OpenTelemetry SDK major (sdk-metrics) tested on this Node */
  otelSdkMajor: () => Number(require(path.join(otelDir, 'node_modules', '@opentelemetry', 'sdk-metrics', 'package.json')).version.split('.')[0]),
};
