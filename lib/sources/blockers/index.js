'use strict';

// The blockers source: what blocked the event loop (issue 32). A watchdog worker thread notices a
// block from the kernel's account of the main thread and captures it with V8's CPU profiler
// through an inspector session; nothing runs on the main thread while the loop is healthy. This
// file declares it (settings, metrics) and creates it; capture.js (main thread), watchdog.js (the
// worker) and summary.js (a profile reduced to its blockers) do the work.

const { setting } = require('../../core/setting');
const { parseOneOf, parseInteger } = require('../../settings/parsers');

const SETTINGS = Object.freeze([
  setting('blockers.mode', 'UVSCOPE_BLOCKERS', parseOneOf(['on', 'off']), 'on or off', { default: 'off', doc: 'the capture of what blocked the event loop (a watchdog thread reading /proc, and stack samples by Sentry\'s native capture while a block lasts; Linux)' }),
  setting('blockers.thresholdMs', 'UVSCOPE_BLOCKERS_THRESHOLD_MS', parseInteger(20, 60000), 'an integer number of milliseconds from 20 to 60000 (a block at least this long is captured)', { default: 100 }),
]);

/** @type {import('../index').Source} */
const source = Object.freeze({
  name: 'blockers',
  settings: SETTINGS,
  get metrics() {
    return require('./metrics').METRICS;
  },
  create: (ctx) => require('./capture').createBlockersSampler(ctx.options.blockers || {}),
});

module.exports = { source };
