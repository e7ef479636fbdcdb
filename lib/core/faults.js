'use strict';

// Fault injection for the containment test (test/containment.test.js): UVSCOPE_TEST_FAULTS names
// seams, comma-separated, where uvscope then throws, to show that each failure stays inside
// uvscope. `seam@N` throws only on the first N calls. Read once, when uvscope loads; unset (as in
// production) every check is one comparison. The seams are listed in SEAMS.
// UVSCOPE_TEST_CHECK_QUIET (the tests' child processes, test/helpers/child.js) has the agent's
// findings engine evaluate the rules it skips for a quiet window anyway and fail if one fires
// (lib/findings/engine.js checkQuiet): every test app is then a check of the rules' quiet().

const SEAMS = Object.freeze([
  'agent:start', // the end of Agent.start(), after samplers and exporters were created
  'findings', // the findings engine, each sample
  'dns:started', // the DNS wrapper's bookkeeping when a lookup starts, inside the app's dns.lookup
  'dns:record', // ... when it ends, inside the app's callback path
  'channel:connections', // every diagnostics-channel handler of the connections sampler
  'channel:otlp', // the OTLP exporter's per-lookup handler
  'channel:datadog.lookups', // the Datadog exporter's per-lookup handler
  'channel:datadog.spans', // the Datadog exporter's span taggers (uvscope's and dd-trace's channels)
  'datadog:address', // the Datadog Agent address refresh, when it builds a new client
  // and, built from names: `sample:<sampler>`, `details:<sampler>`, `create:<sampler|exporter>`,
  // `export:<exporter>`
]);

const { setting, readSetting } = require('./setting');
const { parseString, parseBoolean, BOOLEAN } = require('../settings/parsers');

/** The settings declared here (lib/agent/options.js lists them). */
const SETTINGS = Object.freeze([
  setting('test.faults', 'UVSCOPE_TEST_FAULTS', parseString, 'seam names, comma-separated', { late: true, default: '' }),
  setting('test.checkQuiet', 'UVSCOPE_TEST_CHECK_QUIET', parseBoolean, BOOLEAN, { late: true, default: false }),
]);

const faults = new Map();
for (const entry of String(readSetting(SETTINGS[0]) || '').split(',')) {
  const [seam, times] = entry.trim().split('@');
  if (seam) faults.set(seam, times === undefined ? Infinity : Number(times));
}

/**
 * Throw here if the containment test asked for a fault at this seam.
 * @param {string} seam
 */
function injectFault(seam) {
  if (faults.size === 0) return;
  const left = faults.get(seam);
  if (!(left > 0)) return;
  faults.set(seam, left - 1);
  throw new Error(`uvscope test fault at ${seam}`);
}

/** Whether any seam is set (false in production): per-lookup paths test it before calling injectFault(). */
const faultsOn = faults.size > 0;

/** Whether the findings engine checks the rules' quiet() (false in production). */
const checkQuietOn = readSetting(SETTINGS[1]) === true;

module.exports = { injectFault, faultsOn, checkQuietOn, SEAMS, SETTINGS };
