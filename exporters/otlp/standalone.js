'use strict';

const { createOwnAgent } = require('../../lib/own-io');
const { invalid, parseBoolean } = require('../../lib/options');
const { warnOnce, countError } = require('../../lib/report');
const { processIdentity, PID_ATTRIBUTE, WORKER_ATTRIBUTE } = require('../../lib/multiprocess');

// One exporter package per OTLP protocol, as the SDK's own NodeSDK picks them
// (sdk-node getOtlpMetricExporterFromEnv).
const PROTOCOLS = Object.freeze({
  'http/protobuf': '@opentelemetry/exporter-metrics-otlp-proto',
  'http/json': '@opentelemetry/exporter-metrics-otlp-http',
  grpc: '@opentelemetry/exporter-metrics-otlp-grpc',
});

/**
 * What uvscope reads of the standard OpenTelemetry variables. The exporter packages read the
 * rest themselves (OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION,
 * _CERTIFICATE, OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE), and the resources package
 * reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. A bad value warns once and the
 * specification's default is used, as for uvscope's own settings.
 * @param {NodeJS.ProcessEnv} env
 * @returns {{ disabled: boolean, protocol: string, intervalMs: number, timeoutMs: number }}
 */
function standardSettings(env) {
  const disabled = env.OTEL_SDK_DISABLED ? parseBoolean(env.OTEL_SDK_DISABLED) === true : false;
  const protocolVar = ['OTEL_EXPORTER_OTLP_METRICS_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'].find((name) => env[name] && env[name].trim());
  let protocol = 'http/protobuf';
  if (protocolVar) {
    const raw = env[protocolVar].trim().toLowerCase();
    if (PROTOCOLS[raw]) protocol = raw;
    else invalid(protocolVar, env[protocolVar], Object.keys(PROTOCOLS).join(', '), protocol);
  }
  const intervalMs = milliseconds(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60000);
  // The periodic reader refuses a timeout above the interval; the SDK's NodeSDK clamps it too.
  const timeoutMs = Math.min(milliseconds(env, 'OTEL_METRIC_EXPORT_TIMEOUT', 30000), intervalMs);
  return { disabled, protocol, intervalMs, timeoutMs };
}

function milliseconds(env, name, fallback) {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw.trim());
  if (Number.isInteger(n) && n > 0 && n <= 2147483647) return n;
  invalid(name, raw, 'a positive integer number of milliseconds', fallback);
  return fallback;
}

/**
 * uvscope's own MeterProvider, built from the OpenTelemetry SDK packages (loaded here, only in
 * standalone mode) and configured only by the standard OTEL_* variables. It is never registered
 * as the global provider, so an SDK the app starts later still can be.
 * @param {object} [options]
 * @param {NodeJS.ProcessEnv} [options.env]
 * @param {Function} [options.lookup] dns.lookup before uvscope wrapped it, for the exporter's own lookups
 * @returns {{ provider: object, settings: object, shutdown(): Promise<void> } | null} null when
 *   OTEL_SDK_DISABLED is true or a package is missing (one warning says which)
 */
function createStandaloneProvider({ env = process.env, lookup } = {}) {
  const settings = standardSettings(env);
  if (settings.disabled) {
    warnOnce('UVSCOPE_OTLP_DISABLED', 'uvscope: OTEL_SDK_DISABLED is true, so uvscope\'s own OTLP export (UVSCOPE_EXPORTERS=otlp, standalone mode) is off');
    return null;
  }
  let sdk;
  let resources;
  let OTLPMetricExporter;
  const exporterPackage = PROTOCOLS[settings.protocol];
  try {
    sdk = require('@opentelemetry/sdk-metrics');
    resources = require('@opentelemetry/resources');
    ({ OTLPMetricExporter } = require(exporterPackage));
  } catch (err) {
    if (err && err.code !== 'MODULE_NOT_FOUND') throw err;
    countError('exporter:otlp');
    warnOnce('UVSCOPE_OTLP_SDK_MISSING', `uvscope: OTLP export without an app SDK needs the OpenTelemetry SDK packages: npm install @opentelemetry/sdk-metrics @opentelemetry/resources ${exporterPackage} (${err.message.split('\n')[0]}). The app goes on without OTLP export.`);
    return null;
  }
  // Over HTTP the exporter's requests go through an agent of uvscope's own, so they (and its
  // lookups of the endpoint's name) are not counted as the app's. grpc makes its own connections.
  const config = settings.protocol === 'grpc' ? {} : { httpAgentOptions: (protocol) => createOwnAgent(protocol, lookup) };
  const exporter = reportingFailures(new OTLPMetricExporter(config), settings);
  const reader = new sdk.PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: settings.intervalMs,
    exportTimeoutMillis: settings.timeoutMs,
  });
  const provider = new sdk.MeterProvider({ resource: resourceFromEnv(resources), readers: [reader] });
  return {
    provider,
    settings,
    async shutdown() {
      await provider.shutdown();
    },
  };
}

/**
 * The resource as the SDK builds it by default: telemetry.sdk.*, service.name, then this
 * process (process.pid, and nodejs.cluster.worker.id in a cluster worker, so the processes of a
 * multi-process app stay apart), then OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME.
 * resources 2.x has functions, 1.x a class.
 */
function resourceFromEnv(resources) {
  const { pid, workerId } = processIdentity();
  const own = workerId === undefined ? { [PID_ATTRIBUTE]: pid } : { [PID_ATTRIBUTE]: pid, [WORKER_ATTRIBUTE]: workerId };
  if (typeof resources.defaultResource === 'function') {
    return resources.defaultResource().merge(resources.resourceFromAttributes(own)).merge(resources.detectResources({ detectors: [resources.envDetector] }));
  }
  return resources.Resource.default().merge(new resources.Resource(own)).merge(resources.detectResourcesSync({ detectors: [resources.envDetectorSync] }));
}

/**
 * The OTLP exporter with failed exports turned into one process warning (per process, not per
 * export) and a count in uvscope.errors. The SDK itself only tells its diag logger, which is
 * silent unless the app set one.
 */
function reportingFailures(exporter, settings) {
  // Delegating by hand (not Object.create) keeps the exporter's own `this` for its methods.
  const wrapped = {};
  for (const method of ['forceFlush', 'shutdown', 'selectAggregationTemporality', 'selectAggregation']) {
    if (typeof exporter[method] === 'function') wrapped[method] = (...args) => exporter[method](...args);
  }
  wrapped.export = (metrics, resultCallback) => {
    exporter.export(metrics, (result) => {
      if (result && result.code !== 0) {
        countError('exporter:otlp');
        const why = result.error ? result.error.message || String(result.error) : 'unknown error';
        warnOnce('UVSCOPE_OTLP_EXPORT_FAILED', `uvscope: exporting metrics over OTLP (${settings.protocol}) failed: ${why}. Later failures are counted in uvscope.errors{uvscope.component="exporter:otlp"} and not reported again; the app is not affected.`);
      }
      resultCallback(result);
    });
  };
  return wrapped;
}

module.exports = { createStandaloneProvider, standardSettings, PROTOCOLS };
