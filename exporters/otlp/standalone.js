'use strict';

const { createOwnAgent, withoutTracing } = require('../../lib/core/own-io');
const { readSetting } = require('../../lib/core/setting');
const { otlpStandardSettings, EXPORT_TIMEOUT } = require('./manifest');
const { warnOnce, countError } = require('../../lib/core/errors');
const { WARNINGS } = require('../../lib/core/warnings');
const { processIdentity, PID_ATTRIBUTE, WORKER_ATTRIBUTE } = require('../../lib/core/identity');
const { createReader } = require('./reader');

// Each export attempt of uvscope's own exporter is bounded by this (or by the standard timeout
// variables when lower). It is below the exporter's first retry back-off (1 s with +-20 % jitter,
// otlp-exporter-base retrying-transport.js), whose timer is referenced: the SDK then never retries
// on its own, and an export in flight when the app's work ends holds it at most this long (grpc's
// calls ref their connection; over HTTP uvscope's sockets are unref'd and hold nothing). A failed
// interval is not retried: with cumulative temporality, the default, the next export carries it.
const EXPORT_TIMEOUT_MAX_MS = 750;

// One exporter package per OTLP protocol (manifest.js PROTOCOLS), as the SDK's own NodeSDK
// picks them (sdk-node getOtlpMetricExporterFromEnv). The exporter packages read the rest of the
// standard variables themselves (OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT, _HEADERS,
// _COMPRESSION, _CERTIFICATE, OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE), and the resources
// package reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
const PROTOCOLS = Object.freeze({
  'http/protobuf': '@opentelemetry/exporter-metrics-otlp-proto',
  'http/json': '@opentelemetry/exporter-metrics-otlp-http',
  grpc: '@opentelemetry/exporter-metrics-otlp-grpc',
});

/**
 * uvscope's own MeterProvider, built from the OpenTelemetry SDK packages (loaded here, only in
 * standalone mode) and configured only by the standard OTEL_* variables (read now, through
 * lib/agent/options.js). It is never registered as the global provider, so an SDK the app starts later
 * still can be.
 * @param {object} [options]
 * @param {NodeJS.ProcessEnv} [options.env]
 * @param {Function} [options.lookup] dns.lookup before uvscope wrapped it, for the exporter's own lookups
 * @returns {{ provider: object, settings: object, shutdown(): Promise<void> } | null} null when
 *   OTEL_SDK_DISABLED is true or a package is missing (one warning says which)
 */
function createStandaloneProvider({ env, lookup } = {}) {
  const settings = standaloneSettings(env);
  if (settings.disabled) {
    warnOnce(WARNINGS.OTLP_DISABLED, 'uvscope: OTEL_SDK_DISABLED is true, so uvscope\'s own OTLP export (UVSCOPE_EXPORTERS=otlp, standalone mode) is off');
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
    warnOnce(WARNINGS.OTLP_SDK_MISSING, `uvscope: OTLP export without an app SDK needs the OpenTelemetry SDK packages: npm install @opentelemetry/sdk-metrics @opentelemetry/resources ${exporterPackage} (${err.message.split('\n')[0]}). The app goes on without OTLP export.`);
    return null;
  }
  // Over HTTP the exporter's requests go through an agent of uvscope's own, so they (and its
  // lookups of the endpoint's name) are not counted as the app's, on unref'd sockets, so they
  // never hold the process. grpc makes its own connections.
  const config = { timeoutMillis: settings.exportTimeoutMs };
  if (settings.protocol !== 'grpc') config.httpAgentOptions = (protocol) => createOwnAgent(protocol, lookup, { unrefSockets: true });
  const exporter = reportingFailures(new OTLPMetricExporter(config), settings);
  const reader = createReader(sdk, { exporter, intervalMs: settings.intervalMs, timeoutMs: settings.timeoutMs });
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
  // Delegating by hand (not Object.create) keeps the exporter's own `this` for its methods. What
  // may send (export, forceFlush, shutdown) runs without tracing (lib/core/own-io.js): its
  // lookups, connections and requests are uvscope's own, never spans in the app's traces.
  const wrapped = {};
  for (const method of ['forceFlush', 'shutdown']) {
    if (typeof exporter[method] === 'function') wrapped[method] = (...args) => withoutTracing(() => exporter[method](...args));
  }
  for (const method of ['selectAggregationTemporality', 'selectAggregation']) {
    if (typeof exporter[method] === 'function') wrapped[method] = (...args) => exporter[method](...args);
  }
  wrapped.export = (metrics, resultCallback) => withoutTracing(() => exporter.export(metrics, (result) => {
    if (result && result.code !== 0) {
      countError('exporter:otlp');
      const why = result.error ? result.error.message || String(result.error) : 'unknown error';
      warnOnce(WARNINGS.OTLP_EXPORT_FAILED, `uvscope: exporting metrics over OTLP (${settings.protocol}) failed: ${why}. Later failures are counted in uvscope.errors{uvscope.component="exporter:otlp"} and not reported again; the app is not affected.`);
    }
    resultCallback(result);
  }));
  return wrapped;
}

/**
 * The standard settings (manifest.js) and one export attempt's timeout: the standard timeout
 * variables (OTEL_EXPORTER_OTLP_METRICS_TIMEOUT, then OTEL_EXPORTER_OTLP_TIMEOUT, 10 s by default),
 * the collection timeout and EXPORT_TIMEOUT_MAX_MS, whichever is lowest.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {{ disabled: boolean, protocol: string, intervalMs: number, timeoutMs: number, exportTimeoutMs: number }}
 */
function standaloneSettings(env) {
  const settings = otlpStandardSettings(env);
  return { ...settings, exportTimeoutMs: Math.min(readSetting(EXPORT_TIMEOUT, env), settings.timeoutMs, EXPORT_TIMEOUT_MAX_MS) };
}

module.exports = { createStandaloneProvider, standaloneSettings, PROTOCOLS, EXPORT_TIMEOUT_MAX_MS };
