'use strict';

// The threadpool source: pool size, DNS slots, pending and queued work, the probes' queue wait,
// and the tracer (async_hooks) that follows each job while armed. This file declares it (its
// settings and metrics) and creates it; sampler.js, tracer.js and pool-threads.js do the work.
// UV_THREADPOOL_SIZE is libuv's, declared in lib/core/libuv.js (the DNS source and DogStatsD read it too).

const { setting } = require('../../core/setting');
const { parseOneOf, parseInteger } = require('../../settings/parsers');
const { POOL_HELD } = require('../../core/pool-held');

const SETTINGS = Object.freeze([
  setting('tracer.mode', 'UVSCOPE_TRACER', parseOneOf(['auto', 'on', 'off']), 'auto (armed for a window when the pool is held), on or off', { default: 'auto', doc: 'the threadpool tracer (async_hooks)' }),
  // The default is the premise of the pool findings (the signal poolHeld: lib/core/pool-held.js).
  setting('tracer.thresholdMs', 'UVSCOPE_TRACER_THRESHOLD_MS', parseInteger(1, 600000), 'an integer number of milliseconds from 1 to 600000 (a probe\'s wait for a thread, beyond the event loop\'s own delay, that arms the tracer)', { default: POOL_HELD.poolWaitS * 1000 }),
  setting('tracer.windowMs', 'UVSCOPE_TRACER_WINDOW_MS', parseInteger(100, 3600000), 'an integer number of milliseconds from 100 to 3600000 (how long auto mode stays armed)', { default: 10000 }),
  setting('tracer.cooldownMs', 'UVSCOPE_TRACER_COOLDOWN_MS', parseInteger(0, 86400000), 'an integer number of milliseconds from 0 to 86400000 (time disarmed before auto mode may arm again)', { default: 90000 }),
]);

/** @type {import('../index').Source} */
const source = Object.freeze({
  name: 'threadpool',
  // With the tracer on (UVSCOPE_TRACER=on) it follows jobs from the app's first line.
  early: (options) => Boolean(options.tracer && options.tracer.mode === 'on'),
  settings: SETTINGS,
  // Read by the catalog, at the agent's second phase: metrics.js is not loaded in the preload.
  get metrics() {
    return require('./metrics').METRICS;
  },
  create: (ctx) => require('./sampler').createThreadpoolSampler({ lookupService: ctx.ownIo.lookupService, tracer: ctx.options.tracer }),
});

module.exports = { source };
