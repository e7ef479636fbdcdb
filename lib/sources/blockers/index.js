'use strict';

// The blockers source: what blocked the event loop. A watchdog worker thread notices a
// block from the kernel's account of the main thread and, while it lasts, samples the main
// thread's stack with Sentry's native capture (an optional dependency); nothing runs on the main
// thread while the loop is healthy; by default (auto) it starts at the first block and stops after
// a quiet period (arming.js; starved.js tells a starved process from a block). This file declares it (settings, metrics) and creates it;
// capture.js (main thread; native.js loads the capture), watchdog.js (the worker) and summary.js
// (stack samples reduced to their blockers) do the work. Its cost: bench/blockers.js,
// bench/blockers-stop.js.

const { setting } = require('../../core/setting');
const { parseOneOf, parseInteger } = require('../../settings/parsers');

const SETTINGS = Object.freeze([
  setting('blockers.mode', 'UVSCOPE_BLOCKERS', parseOneOf(['auto', 'on', 'off']), 'auto, on or off', { default: 'auto', doc: 'the capture of what blocked the event loop: a watchdog thread reads the main thread\'s CPU time in /proc and, while a block lasts, samples its JavaScript stack (Sentry\'s native capture; each sample stops the main thread about 0.1 ms); Linux. auto (the default): nothing of it runs until an interval\'s event-loop delay, less the main thread\'s wait for a CPU (and, where it waited off the CPU for its own threads, their wait for one: a starved process is not a block), reaches the threshold; then it starts (the blocks of that interval are timed, not seen into) and stops after 10 minutes without a block, its worker\'s memory (+10 MB of RSS on Node 20, +18 MB on Node 24, docs/cost.md) returned. on: always running; off: never' }),
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
