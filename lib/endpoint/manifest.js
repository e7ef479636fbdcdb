'use strict';

// The endpoint's settings rows (lib/agent/options.js takes them): the snapshot's own server, when
// Prometheus (which serves it otherwise) is off (server.js), and several processes of one app on
// one endpoint (multiprocess/). Light: it imports only lib/core and lib/settings.

const { setting } = require('../core/setting');
const { BOOLEAN, parseBoolean, parseHost, parseInteger } = require('../settings/parsers');


const SETTINGS = Object.freeze([
  setting('snapshot.host', 'UVSCOPE_SNAPSHOT_HOST', parseHost, 'an IP address or hostname to listen on, e.g. 127.0.0.1 or 0.0.0.0', { default: '127.0.0.1', doc: 'where /snapshot.json is served when Prometheus is off' }),
  setting('snapshot.port', 'UVSCOPE_SNAPSHOT_PORT', parseInteger(0, 65535), 'an integer port from 0 to 65535', { default: 9464, doc: 'its port (0 picks a free one)' }),
  setting('multiprocess.aggregate', 'UVSCOPE_MULTIPROCESS', parseBoolean, `${BOOLEAN} (true: a process that finds the endpoint's port held by another uvscope process sends its figures there)`, { default: true, doc: 'several processes of one app on one endpoint' }),
  setting('multiprocess.maxProcesses', 'UVSCOPE_MULTIPROCESS_MAX_PROCESSES', parseInteger(1, 4096), 'an integer from 1 to 4096', { default: 128, doc: 'other processes the endpoint serves at once' }),
  setting('multiprocess.ttlMs', 'UVSCOPE_MULTIPROCESS_TTL_MS', parseInteger(1000, 86400000), 'an integer number of milliseconds from 1000 to 86400000 (default: 3 sampling intervals of that process)', { doc: 'how long the series of a process that stopped sending stay' }),
]);

module.exports = { SETTINGS };
