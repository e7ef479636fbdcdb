'use strict';

// The package's main: start(), stop(), getAgent(), preload() (lib/agent/start.js) and the metric
// catalog (lib/snapshot/catalog.js).

const { start, stop, getAgent, preload } = require('./agent/start');
const { CATALOG } = require('./snapshot/catalog');

module.exports = { start, stop, getAgent, preload, catalog: CATALOG };
