'use strict';

// The Prometheus exporter's declaration: its name and settings rows (exporters/index.js lists it;
// lib/agent/options.js takes its rows). Light: it imports only lib/core and lib/settings, so
// reading it never loads prom-client.

const { setting } = require('../../lib/core/setting');
const { parseHost, parseInteger, parseObjectWith } = require('../../lib/settings/parsers');

module.exports = Object.freeze({
  name: 'prometheus',
  settings: Object.freeze([
    setting('prometheus.host', 'UVSCOPE_PROMETHEUS_HOST', parseHost, 'an IP address or hostname to listen on, e.g. 127.0.0.1 or 0.0.0.0', { default: '127.0.0.1', doc: 'the address the metrics server listens on' }),
    setting('prometheus.port', 'UVSCOPE_PROMETHEUS_PORT', parseInteger(0, 65535), 'an integer port from 0 to 65535', { default: 9464, doc: 'the port of the metrics server (0 picks a free one)' }),
    setting('prometheus.registry', [], parseObjectWith(['registerMetric', 'metrics']), 'a Registry of prom-client 15 or @prometheus-io/client 0.16', { using: 'uvscope\'s own registry and HTTP server', ts: 'Registry', doc: 'put uvscope\'s metrics into this registry instead (no server is opened)' }),
  ]),
});
