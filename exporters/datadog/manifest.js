'use strict';

// The DogStatsD exporter's declaration: its name and settings rows (exporters/index.js
// lists it; lib/agent/options.js takes its rows). Light: it imports only lib/core and
// lib/settings, so reading it never loads hot-shots.

const { setting } = require('../../lib/core/setting');
const {
  BOOLEAN, parseBoolean, parseAutoBoolean, parseInteger, parseHost, parseName, parseDogStatsdUrl, parseTags, parseObjectWith,
} = require('../../lib/settings/parsers');

const NAME = 'a non-empty name of at most 200 characters';

// dd-trace's own variable: whether its runtime metrics (event loop, heap, GC) are on. Read when
// used: the app may set it in its own code.
const RUNTIME_METRICS = setting('datadog.runtimeMetrics', 'DD_RUNTIME_METRICS_ENABLED', parseBoolean, BOOLEAN, { late: true, default: false, doc: 'dd-trace\'s own variable: its runtime metrics are on' });

module.exports = Object.freeze({
  name: 'datadog',
  settings: Object.freeze([
    setting('datadog.url', 'DD_DOGSTATSD_URL', parseDogStatsdUrl, 'udp://host[:port], unix:///path/to/dsd.socket or unixgram:///path/to/dsd.socket', { doc: 'where the Datadog Agent listens, as dd-trace reads it' }),
    setting('datadog.host', ['DD_DOGSTATSD_HOST', 'DD_AGENT_HOST'], parseHost, 'the Datadog Agent\'s hostname or IP address', { default: 'localhost', doc: 'the Datadog Agent\'s host' }),
    setting('datadog.port', 'DD_DOGSTATSD_PORT', parseInteger(1, 65535), 'an integer port from 1 to 65535', { default: 8125, doc: 'the Datadog Agent\'s DogStatsD port' }),
    setting('datadog.service', 'DD_SERVICE', parseName, NAME, { doc: 'unified service tagging (service:<name> on every metric)' }),
    setting('datadog.env', 'DD_ENV', parseName, NAME, { doc: 'unified service tagging (env:<name> on every metric)' }),
    setting('datadog.version', 'DD_VERSION', parseName, NAME, { doc: 'unified service tagging (version:<name> on every metric)' }),
    setting('datadog.tags', 'DD_TAGS', parseTags, 'tags separated by commas or spaces, e.g. team:dns,region:eu (no | or #)', { default: Object.freeze([]), doc: 'extra tags on every metric' }),
    setting('datadog.flushIntervalMs', 'UVSCOPE_DATADOG_FLUSH_INTERVAL_MS', parseInteger(1000, 3600000), 'an integer number of milliseconds from 1000 to 3600000', { default: 10000, doc: 'how often gauges and counts are sent' }),
    setting('datadog.dnsRefreshMs', 'UVSCOPE_DATADOG_DNS_REFRESH_MS', parseInteger(1000, 86400000), 'an integer number of milliseconds from 1000 to 86400000', { default: 60000, doc: 'how often the Agent\'s hostname is looked up again' }),
    setting('datadog.maxLookupsPerSecond', 'UVSCOPE_DATADOG_MAX_LOOKUPS_PER_SECOND', parseInteger(1, 100000), 'an integer from 1 to 100000', { default: 200, doc: 'lookup durations sent unsampled per second; above it they carry a sample rate' }),
    setting('datadog.eventLoop', 'UVSCOPE_DATADOG_EVENT_LOOP', parseAutoBoolean, `auto (off when dd-trace runtime metrics are on), or ${BOOLEAN}`, { default: 'auto', doc: 'whether to send nodejs.eventloop.* and v8js.* (heap, GC)' }),
    setting('datadog.traceTags', 'UVSCOPE_DATADOG_TRACE_TAGS', parseBoolean, BOOLEAN, { default: true, doc: 'tag dd-trace\'s dns.lookup spans with uvscope\'s context' }),
    setting('datadog.client', [], parseObjectWith(['gauge', 'increment', 'distribution']), 'a hot-shots StatsD client (gauge, increment and distribution methods)', { ts: 'import(\'hot-shots\').StatsD', doc: 'send through this client instead of uvscope\'s own' }),
    RUNTIME_METRICS,
  ]),
  RUNTIME_METRICS,
});
