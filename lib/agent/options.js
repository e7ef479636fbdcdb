'use strict';

// Every setting uvscope reads, in one table (SETTINGS): its place in start(options), its
// environment variable(s), its parser (lib/settings/parsers.js, one per type) and what a warning
// says is accepted. Nothing else in uvscope reads process.env: settings the app may still change
// in its own code after the preload are read when they are used, through readSetting().

const { warnOnce, countError } = require('../core/errors');
const { WARNINGS } = require('../core/warnings');
const { threadpoolSize } = require('../core/libuv');
const {
  parseBoolean, parseAutoBoolean, parseInteger, parseOneOf, parseList, parseHost, parseName, parseString,
  parseDogStatsdUrl, parseTags, parseObjectWith, parseEither, parseMatching,
} = require('../settings/parsers');

/** Exporters this version knows (the list is exporters/index.js; each is exporters/<name>/). */
const EXPORTERS = Object.freeze(Object.keys(require('../../exporters').EXPORTERS));

/** OTLP protocols (OTEL_EXPORTER_OTLP_PROTOCOL), one exporter package each. */
const OTLP_PROTOCOLS = Object.freeze(['http/protobuf', 'http/json', 'grpc']);

const DEFAULTS = Object.freeze({
  disabled: false,
  exporters: Object.freeze(['prometheus']),
  intervalMs: 1000,
  reportOnExit: false,
  prometheus: Object.freeze({ host: '127.0.0.1', port: 9464, registry: undefined }),
  snapshot: Object.freeze({ host: '127.0.0.1', port: 9464 }),
  multiprocess: Object.freeze({ aggregate: true, maxProcesses: 128, ttlMs: undefined }),
  dns: Object.freeze({ maxNames: 100 }),
  tracer: Object.freeze({ mode: 'auto', thresholdMs: 250, windowMs: 10000, cooldownMs: 90000 }),
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

const BOOLEAN = 'true/false, 1/0, yes/no, on/off';
const NAME = 'a non-empty name of at most 200 characters';

// One row per setting. Rows read at start() fill the resolved options (an option given to start()
// wins over the environment, which wins over DEFAULTS). Rows marked `late` are read from the
// environment each time readSetting() asks, because the app may set them in its own code after
// uvscope's preload (UV_THREADPOOL_SIZE before its first threadpool job, OTEL_* before uvscope
// builds its own OTLP exporter at the first sample); they are not options of start().
const SETTINGS = Object.freeze([
  setting('disabled', 'UVSCOPE_DISABLED', parseBoolean, BOOLEAN),
  setting('exporters', 'UVSCOPE_EXPORTERS', parseList(EXPORTERS), `a comma-separated list of ${EXPORTERS.join(', ')}, or none`),
  setting('intervalMs', 'UVSCOPE_INTERVAL_MS', parseInteger(50, 3600000), 'an integer number of milliseconds from 50 to 3600000'),
  setting('reportOnExit', 'UVSCOPE_REPORT_ON_EXIT', parseEither(parseBoolean, parseMatching(/\.html?$/i)),
    `${BOOLEAN} (the text report on stderr), or a file path ending in .html (the page with the data embedded)`),
  setting('prometheus.host', 'UVSCOPE_PROMETHEUS_HOST', parseHost, 'an IP address or hostname to listen on, e.g. 127.0.0.1 or 0.0.0.0'),
  setting('prometheus.port', 'UVSCOPE_PROMETHEUS_PORT', parseInteger(0, 65535), 'an integer port from 0 to 65535'),
  setting('prometheus.registry', [], parseObjectWith(['registerMetric', 'metrics']), 'a Registry of prom-client 15 or @prometheus-io/client 0.16', { using: 'uvscope\'s own registry and HTTP server' }),
  // The snapshot's own server, when Prometheus (which serves it otherwise) is off (lib/endpoint/server.js).
  setting('snapshot.host', 'UVSCOPE_SNAPSHOT_HOST', parseHost, 'an IP address or hostname to listen on, e.g. 127.0.0.1 or 0.0.0.0'),
  setting('snapshot.port', 'UVSCOPE_SNAPSHOT_PORT', parseInteger(0, 65535), 'an integer port from 0 to 65535'),
  // Several processes of one app on one endpoint (lib/endpoint/multiprocess.js).
  setting('multiprocess.aggregate', 'UVSCOPE_MULTIPROCESS', parseBoolean, `${BOOLEAN} (true: a process that finds the endpoint's port held by another uvscope process sends its figures there)`),
  setting('multiprocess.maxProcesses', 'UVSCOPE_MULTIPROCESS_MAX_PROCESSES', parseInteger(1, 4096), 'an integer from 1 to 4096'),
  setting('multiprocess.ttlMs', 'UVSCOPE_MULTIPROCESS_TTL_MS', parseInteger(1000, 86400000), 'an integer number of milliseconds from 1000 to 86400000 (default: 3 sampling intervals of that process)'),
  setting('dns.maxNames', 'UVSCOPE_DNS_MAX_NAMES', parseInteger(1, 100000), 'an integer from 1 to 100000'),
  // --- threadpool tracer (lib/sources/threadpool/tracer.js) ---
  setting('tracer.mode', 'UVSCOPE_TRACER', parseOneOf(['auto', 'on', 'off']),
    'auto (armed for a window when the pool looks saturated), on or off'),
  setting('tracer.thresholdMs', 'UVSCOPE_TRACER_THRESHOLD_MS', parseInteger(1, 600000), 'an integer number of milliseconds from 1 to 600000 (a probe wait that arms the tracer)'),
  setting('tracer.windowMs', 'UVSCOPE_TRACER_WINDOW_MS', parseInteger(100, 3600000), 'an integer number of milliseconds from 100 to 3600000 (how long auto mode stays armed)'),
  setting('tracer.cooldownMs', 'UVSCOPE_TRACER_COOLDOWN_MS', parseInteger(0, 86400000), 'an integer number of milliseconds from 0 to 86400000 (time disarmed before auto mode may arm again)'),
  // --- datadog (exporters/datadog/) ---
  setting('datadog.url', 'DD_DOGSTATSD_URL', parseDogStatsdUrl, 'udp://host[:port], unix:///path/to/dsd.socket or unixgram:///path/to/dsd.socket'),
  setting('datadog.host', ['DD_DOGSTATSD_HOST', 'DD_AGENT_HOST'], parseHost, 'the Datadog Agent\'s hostname or IP address'),
  setting('datadog.port', 'DD_DOGSTATSD_PORT', parseInteger(1, 65535), 'an integer port from 1 to 65535'),
  setting('datadog.service', 'DD_SERVICE', parseName, NAME),
  setting('datadog.env', 'DD_ENV', parseName, NAME),
  setting('datadog.version', 'DD_VERSION', parseName, NAME),
  setting('datadog.tags', 'DD_TAGS', parseTags, 'tags separated by commas or spaces, e.g. team:dns,region:eu (no | or #)'),
  setting('datadog.flushIntervalMs', 'UVSCOPE_DATADOG_FLUSH_INTERVAL_MS', parseInteger(1000, 3600000), 'an integer number of milliseconds from 1000 to 3600000'),
  setting('datadog.dnsRefreshMs', 'UVSCOPE_DATADOG_DNS_REFRESH_MS', parseInteger(1000, 86400000), 'an integer number of milliseconds from 1000 to 86400000'),
  setting('datadog.maxLookupsPerSecond', 'UVSCOPE_DATADOG_MAX_LOOKUPS_PER_SECOND', parseInteger(1, 100000), 'an integer from 1 to 100000'),
  setting('datadog.eventLoop', 'UVSCOPE_DATADOG_EVENT_LOOP', parseAutoBoolean, `auto (off when dd-trace runtime metrics are on), or ${BOOLEAN}`),
  setting('datadog.traceTags', 'UVSCOPE_DATADOG_TRACE_TAGS', parseBoolean, BOOLEAN),
  setting('datadog.client', [], parseObjectWith(['gauge', 'increment', 'distribution']), 'a hot-shots StatsD client (gauge, increment and distribution methods)'),
  // dd-trace's own variable: whether its runtime metrics (event loop, heap, GC) are on.
  setting('datadog.runtimeMetrics', 'DD_RUNTIME_METRICS_ENABLED', parseBoolean, BOOLEAN, { late: true, default: false }),
  // --- otlp (exporters/otlp/) ---
  setting('otlp.mode', 'UVSCOPE_OTLP_MODE', parseOneOf(['auto', 'companion', 'standalone']),
    'auto (the app\'s global MeterProvider if it registers one, else uvscope\'s own), companion or standalone'),
  setting('otlp.runtimeMetrics', 'UVSCOPE_OTLP_RUNTIME_METRICS', onOff(parseAutoBoolean),
    `auto (off when @opentelemetry/instrumentation-runtime-node is loaded), on or off (or ${BOOLEAN})`),
  // The standard OpenTelemetry variables uvscope's own (standalone) OTLP exporter reads itself; the
  // exporter packages read the rest (endpoint, headers, ...), when it is built.
  setting('otlp.sdkDisabled', 'OTEL_SDK_DISABLED', parseBoolean, BOOLEAN, { late: true, default: false }),
  setting('otlp.protocol', ['OTEL_EXPORTER_OTLP_METRICS_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'], parseOneOf(OTLP_PROTOCOLS),
    OTLP_PROTOCOLS.join(', '), { late: true, default: 'http/protobuf' }),
  setting('otlp.intervalMs', 'OTEL_METRIC_EXPORT_INTERVAL', parseInteger(1, 2147483647), 'a positive integer number of milliseconds', { late: true, default: 60000 }),
  setting('otlp.timeoutMs', 'OTEL_METRIC_EXPORT_TIMEOUT', parseInteger(1, 2147483647), 'a positive integer number of milliseconds', { late: true, default: 30000 }),
  // One export attempt of uvscope's own exporter: at most 750 ms whatever this says (see
  // exporters/otlp/standalone.js); the exporter package would read it too, uvscope passes it.
  setting('otlp.exportTimeoutMs', ['OTEL_EXPORTER_OTLP_METRICS_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT'], parseInteger(1, 2147483647), 'a positive integer number of milliseconds', { late: true, default: 10000 }),
  // --- tests only: seams where uvscope throws on purpose (lib/core/faults.js, test/containment.test.js) ---
  setting('test.faults', 'UVSCOPE_TEST_FAULTS', parseString, 'seam names, comma-separated', { late: true, default: '' }),
  // --- libuv and glibc: read as they read them (never invalid), when used ---
  setting('threadpool.size', 'UV_THREADPOOL_SIZE', threadpoolSize, 'a number (libuv reads it with atoi and clamps it to 1..1024)',
    { late: true, default: threadpoolSize(undefined), keepEmpty: true }),
  setting('resolver.localDomain', 'LOCALDOMAIN', parseString, 'a search list', { late: true, default: undefined }),
  setting('resolver.options', 'RES_OPTIONS', parseString, 'resolver options', { late: true, default: undefined }),
]);

const BY_PATH = new Map(SETTINGS.map((s) => [s.path, s]));

/**
 * @typedef {object} Setting
 * @property {string} path where it lives in start(options) (or, for late ones, its name for readSetting())
 * @property {readonly string[]} env its environment variable(s); the first one set wins
 * @property {(raw: unknown) => unknown} parse returns undefined for a bad value
 * @property {string} accepted what a warning says is accepted
 * @property {boolean} late read from the environment when used (readSetting), not at start()
 * @property {unknown} default for late settings (others: DEFAULTS)
 * @property {boolean} keepEmpty an empty variable is a value (as for UV_THREADPOOL_SIZE), not unset
 * @property {string} [using] what a warning says is used instead, when that is not the default
 */

/**
 * One row of SETTINGS.
 * @param {string} path
 * @param {string|string[]} env
 * @param {(raw: unknown) => unknown} parse
 * @param {string} accepted
 * @param {{ late?: boolean, default?: unknown, keepEmpty?: boolean, using?: string }} [more]
 * @returns {Readonly<Setting>}
 */
function setting(path, env, parse, accepted, more = {}) {
  return Object.freeze({
    path, env: Object.freeze([].concat(env)), parse, accepted,
    late: Boolean(more.late), default: more.default, keepEmpty: Boolean(more.keepEmpty), using: more.using,
  });
}

function onOff(parse) {
  return (raw) => {
    const v = parse(raw);
    if (v === true) return 'on';
    if (v === false) return 'off';
    return v;
  };
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
    if (s.late) continue;
    const fromOption = get(given, s.path);
    if (fromOption !== undefined) {
      const value = s.parse(fromOption);
      if (value === undefined) invalid(`options.${s.path}`, fromOption, s.accepted, s.using || get(DEFAULTS, s.path));
      else set(out, s.path, value);
      continue;
    }
    const fromEnv = fromEnvironment(s, env);
    if (fromEnv !== undefined) set(out, s.path, fromEnv);
  }
  for (const value of Object.values(out)) if (value && typeof value === 'object') Object.freeze(value);
  return Object.freeze(out);
}

/**
 * One setting as the environment has it now, parsed by its row; its default when the variable is
 * unset or bad (a bad value warns once). For settings the app may change in its own code after
 * the preload (UV_THREADPOOL_SIZE, OTEL_*, DD_RUNTIME_METRICS_ENABLED), and for the CLI.
 * @param {string} path a path in SETTINGS, e.g. 'threadpool.size'
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {any}
 */
function readSetting(path, env = process.env) {
  const s = BY_PATH.get(path);
  if (!s) throw new Error(`uvscope: no setting ${path}`);
  const value = fromEnvironment(s, env);
  return value === undefined ? defaultOf(s) : value;
}

function fromEnvironment(s, env) {
  // An empty (or blank) variable is unset, except where the program that defines it says otherwise.
  const name = s.env.find((n) => env[n] !== undefined && (s.keepEmpty || String(env[n]).trim() !== ''));
  if (!name) return undefined;
  const value = s.parse(env[name]);
  if (value === undefined) invalid(name, env[name], s.accepted, s.using || defaultOf(s));
  return value;
}

function defaultOf(s) {
  return s.late ? s.default : get(DEFAULTS, s.path);
}

/**
 * The settings of uvscope's own OTLP exporter (standalone mode) from the standard OpenTelemetry
 * variables, read when it is built. A bad value warns once and the specification's default is used.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {{ disabled: boolean, protocol: string, intervalMs: number, timeoutMs: number }}
 */
function otlpStandardSettings(env = process.env) {
  const intervalMs = readSetting('otlp.intervalMs', env);
  return {
    disabled: readSetting('otlp.sdkDisabled', env),
    protocol: readSetting('otlp.protocol', env),
    intervalMs,
    // The periodic reader refuses a timeout above the interval; the SDK's NodeSDK clamps it too.
    timeoutMs: Math.min(readSetting('otlp.timeoutMs', env), intervalMs),
  };
}

/**
 * The environment variable a setting is read from (the first, where there are several).
 * @param {string} path a path in SETTINGS
 * @returns {string}
 */
function envName(path) {
  const s = BY_PATH.get(path);
  if (!s || s.env.length === 0) throw new Error(`uvscope: setting ${path} has no environment variable`);
  return s.env[0];
}

/**
 * The environment for a process the CLI starts: this process's, with `overrides` on top.
 * @param {Record<string, string>} overrides
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {Record<string, string|undefined>}
 */
function childEnvironment(overrides, env = process.env) {
  return { ...env, ...overrides };
}

/**
 * Warn once that a setting has a bad value (and count it in uvscope.errors{component="options"}).
 * @param {string} source the variable or `options.<path>`
 * @param {unknown} raw the value given
 * @param {string} accepted what is accepted
 * @param {unknown} [fallback] what is used instead
 */
function invalid(source, raw, accepted, fallback) {
  countError('options');
  const shown = typeof raw === 'string' ? JSON.stringify(raw) : safeString(raw);
  const using = fallback === undefined ? '' : `; using ${Array.isArray(fallback) ? fallback.join(',') : safeString(fallback)}`;
  warnOnce(WARNINGS.INVALID_OPTION, `uvscope: ${source}=${shown} is not valid: expected ${accepted}${using}`, source);
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

module.exports = {
  resolveOptions, readSetting, otlpStandardSettings, envName, childEnvironment,
  DEFAULTS, SETTINGS, EXPORTERS, OTLP_PROTOCOLS, setting, invalid,
  ...require('../settings/parsers'),
};
