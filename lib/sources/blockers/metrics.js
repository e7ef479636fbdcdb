'use strict';

// What the blockers source produces: one histogram, read by the catalog (lib/snapshot/catalog.js).

const { metricDef } = require('../metric-def');

/** Upper bounds for a captured block's duration (at least the threshold, 100 ms by default). */
const BLOCK_BUCKETS = Object.freeze([0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]);

/** @type {readonly import('../metric-def').MetricDef[]} */
const METRICS = Object.freeze([
  metricDef('nodejs.eventloop.block.duration', 'histogram', 's', ['nodejs.eventloop.block.cause'],
    'Blocks of the event loop at least UVSCOPE_BLOCKERS_THRESHOLD_MS long (one callback that did not return), as the watchdog thread timed them (from within a quarter of the threshold to the callback\'s return), by cause: gc when V8\'s garbage collector (its gc entries) had most of the block, else code. What ran is in details.blockers of the snapshot, not in labels.',
    BLOCK_BUCKETS),
]);

module.exports = { METRICS, BLOCK_BUCKETS };
