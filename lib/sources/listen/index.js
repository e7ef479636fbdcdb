'use strict';

// The listen source: the app's listening sockets (net, http, https, http2 servers) and the
// kernel's accept queue in front of each, with the network namespace's listen drop counters.
// This file declares it and creates it; sampler.js keeps the servers, proc.js reads procfs.

/** @type {import('../index').Source} */
const source = Object.freeze({
  name: 'listen',
  // The backlog a server asks for is seen only when it listens, usually in the app's first lines.
  early: true,
  settings: Object.freeze([]),
  // Read by the catalog, at the agent's second phase: metrics.js is not loaded in the preload.
  get metrics() {
    return require('./metrics').METRICS;
  },
  create: () => require('./sampler').createListenSampler(),
});

module.exports = { source };
