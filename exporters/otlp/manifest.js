'use strict';

// The OTLP exporter's declaration: its name and settings rows (exporters/index.js lists it;
// lib/agent/options.js takes its rows), with the standard OpenTelemetry variables uvscope's own
// (standalone) exporter reads itself. Light: it imports only lib/core and lib/settings, so reading
// it never loads an OpenTelemetry package.

const { setting, readSetting } = require('../../lib/core/setting');
const { BOOLEAN, parseBoolean, parseInteger, parseOneOf, parseAutoOnOff } = require('../../lib/settings/parsers');


/** OTLP protocols (OTEL_EXPORTER_OTLP_PROTOCOL), one exporter package each (standalone.js). */
const PROTOCOLS = Object.freeze(['http/protobuf', 'http/json', 'grpc']);

// The standard variables, read from the environment when uvscope builds its own exporter (the app
// may set them in its own code after the preload); the exporter packages read the rest (endpoint,
// headers, ...).
const SDK_DISABLED = setting('otlp.sdkDisabled', 'OTEL_SDK_DISABLED', parseBoolean, BOOLEAN, { late: true, default: false, doc: 'true turns uvscope\'s own (standalone) OTLP export off' });
const PROTOCOL = setting('otlp.protocol', ['OTEL_EXPORTER_OTLP_METRICS_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'], parseOneOf(PROTOCOLS), PROTOCOLS.join(', '), { late: true, default: 'http/protobuf', doc: 'the protocol of uvscope\'s own OTLP exporter' });
const INTERVAL = setting('otlp.intervalMs', 'OTEL_METRIC_EXPORT_INTERVAL', parseInteger(1, 2147483647), 'a positive integer number of milliseconds', { late: true, default: 60000, doc: 'the export interval of uvscope\'s own OTLP exporter' });
const TIMEOUT = setting('otlp.timeoutMs', 'OTEL_METRIC_EXPORT_TIMEOUT', parseInteger(1, 2147483647), 'a positive integer number of milliseconds', { late: true, default: 30000, doc: 'its collection timeout (never more than the interval)' });
// One export attempt of uvscope's own exporter: at most 750 ms whatever this says (see
// standalone.js); the exporter package would read it too, uvscope passes it.
const EXPORT_TIMEOUT = setting('otlp.exportTimeoutMs', ['OTEL_EXPORTER_OTLP_METRICS_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT'], parseInteger(1, 2147483647), 'a positive integer number of milliseconds', { late: true, default: 10000, doc: 'one export attempt of it (uvscope uses at most 750 ms)' });

/**
 * The settings of uvscope's own OTLP exporter (standalone mode) from the standard OpenTelemetry
 * variables, read when it is built. A bad value warns once and the specification's default is used.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {{ disabled: boolean, protocol: string, intervalMs: number, timeoutMs: number }}
 */
function otlpStandardSettings(env) {
  const intervalMs = readSetting(INTERVAL, env);
  return {
    disabled: readSetting(SDK_DISABLED, env),
    protocol: readSetting(PROTOCOL, env),
    intervalMs,
    // The periodic reader refuses a timeout above the interval; the SDK's NodeSDK clamps it too.
    timeoutMs: Math.min(readSetting(TIMEOUT, env), intervalMs),
  };
}

module.exports = Object.freeze({
  name: 'otlp',
  settings: Object.freeze([
    setting('otlp.mode', 'UVSCOPE_OTLP_MODE', parseOneOf(['auto', 'companion', 'standalone']), 'auto (the app\'s global MeterProvider if it registers one, else uvscope\'s own), companion or standalone', { default: 'auto', doc: 'where OTLP metrics go' }),
    setting('otlp.runtimeMetrics', 'UVSCOPE_OTLP_RUNTIME_METRICS', parseAutoOnOff, `auto (off when @opentelemetry/instrumentation-runtime-node is loaded), on or off (or ${BOOLEAN})`, { default: 'auto', doc: 'whether to export nodejs.eventloop.* and v8js.*' }),
    setting('otlp.traceAttributes', 'UVSCOPE_OTLP_TRACE_ATTRIBUTES', parseBoolean, BOOLEAN, { default: true, doc: 'put uvscope\'s context on OpenTelemetry dns.lookup spans' }),
    SDK_DISABLED, PROTOCOL, INTERVAL, TIMEOUT, EXPORT_TIMEOUT,
  ]),
  otlpStandardSettings,
  EXPORT_TIMEOUT,
});
