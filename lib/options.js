'use strict';

const { warnOnce, countError } = require('./report');
const datadogSettings = require('../exporters/datadog/settings');

/** Exporters this version knows (each is exporters/<name>.js). */
const EXPORTERS = Object.freeze(['prometheus', 'otlp', 'datadog']);

const DEFAULTS = Object.freeze({
  disabled: false,
  exporters: Object.freeze(['prometheus']),
  intervalMs: 1000,
  reportOnExit: false,
  prometheus: Object.freeze({ host: '127.0.0.1', port: 9464, registry: undefined, aggregate: true, maxProcesses: 128, processTtlMs: undefined }),
  dns: Object.freeze({ maxNames: 100 }),
  datadog: Object.freeze({
    url: undefined,
    host: 'localhost',
    port: 8125,
    service: undefined,
    env: undefined,
    version: undefined,
    tags: Object.freeze([]),
    flushIntervalMs: 10000,
    dnsRefreshMs: 60000,
    maxLookupsPerSecond: 200,
    eventLoop: 'auto',
    traceTags: true,
    client: undefined,
  }),
  otlp: Object.freeze({ mode: 'auto', runtimeMetrics: 'auto' }),
});

// One row per setting: where it lives in start(options), its environment variable, how to parse
// it, and the words a warning uses for what is accepted.
const SETTINGS = Object.freeze([
  setting('disabled', 'UVSCOPE_DISABLED', parseBoolean, 'true/false, 1/0, yes/no'),
  setting('exporters', 'UVSCOPE_EXPORTERS', parseExporters, `a comma-separated list of ${EXPORTERS.join(', ')}, or none`),
  setting('intervalMs', 'UVSCOPE_INTERVAL_MS', parseInteger(50, 3600000), 'an integer number of milliseconds from 50 to 3600000'),
  setting('reportOnExit', 'UVSCOPE_REPORT_ON_EXIT', parseReportOnExit, 'true/false, 1/0, yes/no (the text report on stderr), or a file path ending in .html (the page with the data embedded)'),
  setting('prometheus.host', 'UVSCOPE_PROMETHEUS_HOST', parseHost, 'an IP address or hostname to listen on, e.g. 127.0.0.1 or 0.0.0.0'),
  setting('prometheus.port', 'UVSCOPE_PROMETHEUS_PORT', parseInteger(0, 65535), 'an integer port from 0 to 65535'),
  // --- several processes on one port (lib/multiprocess.js) ---
  setting('prometheus.aggregate', 'UVSCOPE_PROMETHEUS_AGGREGATE', parseBoolean, 'true/false, 1/0, yes/no (true: a process that finds the port taken by another uvscope process sends its figures there)'),
  setting('prometheus.maxProcesses', 'UVSCOPE_PROMETHEUS_MAX_PROCESSES', parseInteger(1, 4096), 'an integer from 1 to 4096'),
  setting('prometheus.processTtlMs', 'UVSCOPE_PROMETHEUS_PROCESS_TTL_MS', parseInteger(1000, 86400000), 'an integer number of milliseconds from 1000 to 86400000 (default: 3 sampling intervals of that process)'),
  setting('dns.maxNames', 'UVSCOPE_DNS_MAX_NAMES', parseInteger(1, 100000), 'an integer from 1 to 100000'),
  // --- datadog (exporters/datadog/) ---
  setting('datadog.url', 'DD_DOGSTATSD_URL', datadogSettings.parseUrl, 'udp://host[:port], unix:///path/to/dsd.socket or unixgram:///path/to/dsd.socket'),
  setting('datadog.host', ['DD_DOGSTATSD_HOST', 'DD_AGENT_HOST'], parseHost, 'the Datadog Agent\'s hostname or IP address'),
  setting('datadog.port', 'DD_DOGSTATSD_PORT', parseInteger(1, 65535), 'an integer port from 1 to 65535'),
  setting('datadog.service', 'DD_SERVICE', datadogSettings.parseTagValue, 'a non-empty name of at most 200 characters'),
  setting('datadog.env', 'DD_ENV', datadogSettings.parseTagValue, 'a non-empty name of at most 200 characters'),
  setting('datadog.version', 'DD_VERSION', datadogSettings.parseTagValue, 'a non-empty name of at most 200 characters'),
  setting('datadog.tags', 'DD_TAGS', datadogSettings.parseTags, 'tags separated by commas or spaces, e.g. team:dns,region:eu (no | or #)'),
  setting('datadog.flushIntervalMs', 'UVSCOPE_DATADOG_FLUSH_INTERVAL_MS', parseInteger(1000, 3600000), 'an integer number of milliseconds from 1000 to 3600000'),
  setting('datadog.dnsRefreshMs', 'UVSCOPE_DATADOG_DNS_REFRESH_MS', parseInteger(1000, 86400000), 'an integer number of milliseconds from 1000 to 86400000'),
  setting('datadog.maxLookupsPerSecond', 'UVSCOPE_DATADOG_MAX_LOOKUPS_PER_SECOND', parseInteger(1, 100000), 'an integer from 1 to 100000'),
  setting('datadog.eventLoop', 'UVSCOPE_DATADOG_EVENT_LOOP', datadogSettings.parseAutoBoolean, 'auto (off when dd-trace runtime metrics are on), true or false'),
  setting('datadog.traceTags', 'UVSCOPE_DATADOG_TRACE_TAGS', parseBoolean, 'true/false, 1/0, yes/no'),
  setting('datadog.client', [], datadogSettings.parseClient, 'a hot-shots StatsD client (gauge, increment and distribution methods)'),
  // --- otlp (exporters/otlp/) ---
  setting('otlp.mode', 'UVSCOPE_OTLP_MODE', (raw) => ['auto', 'companion', 'standalone'].find((m) => m === String(raw).trim().toLowerCase()),
    'auto (the app\'s global MeterProvider if it registers one, else uvscope\'s own), companion or standalone'),
  setting('otlp.runtimeMetrics', 'UVSCOPE_OTLP_RUNTIME_METRICS', (raw) => new Map([['auto', 'auto'], ['on', 'on'], ['true', 'on'], ['off', 'off'], ['false', 'off']]).get(String(raw).trim().toLowerCase()),
    'auto (off when @opentelemetry/instrumentation-runtime-node is loaded), on or off'),
]);

/**
 * @param {string} path where the setting lives in start(options), e.g. 'prometheus.port'
 * @param {string|string[]} env its environment variable(s); the first one set wins
 * @param {(raw: unknown) => unknown} parse returns undefined for a bad value
 * @param {string} accepted what a warning says is accepted
 */
function setting(path, env, parse, accepted) {
  return Object.freeze({ path, env: [].concat(env), parse, accepted });
}

/**
 * Resolve the agent's options: an option given to start() wins over its environment variable,
 * which wins over the default. A bad value never throws: it warns once, naming the setting, the
 * value and what is accepted, and the default is used.
 * @param {object} [options] options given to start()
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {Readonly<object>} resolved, frozen options
 */
function resolveOptions(options, env = process.env) {
  const given = options && typeof options === 'object' ? options : {};
  if (options !== undefined && options !== null && typeof options !== 'object') {
    invalid('start(options)', options, 'an object');
  }
  const out = {};
  for (const [key, value] of Object.entries(DEFAULTS)) {
    out[key] = value && typeof value === 'object' && !Array.isArray(value) ? { ...value } : value;
  }
  for (const s of SETTINGS) {
    const fromOption = get(given, s.path);
    const envName = s.env.find((name) => env[name] !== undefined && env[name] !== '');
    let source;
    let raw;
    if (fromOption !== undefined) {
      source = `options.${s.path}`;
      raw = fromOption;
    } else if (envName) {
      source = envName;
      raw = env[envName];
    } else {
      continue;
    }
    const value = s.parse(raw);
    if (value === undefined) invalid(source, raw, s.accepted, get(DEFAULTS, s.path));
    else set(out, s.path, value);
  }
  const registry = given.prometheus && given.prometheus.registry;
  if (registry !== undefined) {
    if (registry && typeof registry.registerMetric === 'function' && typeof registry.metrics === 'function') {
      out.prometheus.registry = registry;
    } else {
      invalid('options.prometheus.registry', registry, 'a prom-client Registry', 'uvscope\'s own registry and HTTP server');
    }
  }
  for (const value of Object.values(out)) if (value && typeof value === 'object') Object.freeze(value);
  return Object.freeze(out);
}

function invalid(source, raw, accepted, fallback) {
  countError('options');
  const shown = typeof raw === 'string' ? JSON.stringify(raw) : safeString(raw);
  const using = fallback === undefined ? '' : `; using ${Array.isArray(fallback) ? fallback.join(',') : safeString(fallback)}`;
  warnOnce('UVSCOPE_INVALID_OPTION', `uvscope: ${source}=${shown} is not valid: expected ${accepted}${using}`, source);
}

function safeString(v) {
  try {
    return typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
}

function get(obj, path) {
  let cur = obj;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = cur[key];
  }
  return cur;
}

function set(obj, path, value) {
  const keys = path.split('.');
  let cur = obj;
  for (let i = 0; i < keys.length - 1; i++) cur = cur[keys[i]];
  cur[keys[keys.length - 1]] = value;
}

function parseBoolean(raw) {
  if (typeof raw === 'boolean') return raw;
  const s = String(raw).trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(s)) return true;
  if (['0', 'false', 'no', 'off'].includes(s)) return false;
  return undefined;
}

function parseReportOnExit(raw) {
  const flag = parseBoolean(raw);
  if (flag !== undefined) return flag;
  const s = String(raw).trim();
  return /\.html?$/i.test(s) ? s : undefined;
}

function parseInteger(min, max) {
  return (raw) => {
    const s = typeof raw === 'number' ? String(raw) : String(raw).trim();
    if (!/^\d+$/.test(s)) return undefined;
    const n = Number(s);
    return n >= min && n <= max ? n : undefined;
  };
}

function parseHost(raw) {
  const s = String(raw).trim();
  return s !== '' && /^[A-Za-z0-9.:\-[\]%]+$/.test(s) ? s.replace(/^\[(.*)\]$/, '$1') : undefined;
}

function parseExporters(raw) {
  const list = (Array.isArray(raw) ? raw : String(raw).split(','))
    .map((e) => String(e).trim().toLowerCase())
    .filter(Boolean);
  if (list.length === 0) return undefined;
  if (list.length === 1 && list[0] === 'none') return Object.freeze([]);
  if (!list.every((e) => EXPORTERS.includes(e))) return undefined;
  return Object.freeze([...new Set(list)]);
}

module.exports = { resolveOptions, DEFAULTS, SETTINGS, EXPORTERS, setting, invalid, parseInteger, parseBoolean, parseHost };
