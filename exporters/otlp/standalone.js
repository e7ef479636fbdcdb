'use strict';

const { createOwnAgent } = require('../../lib/own-io');
const { otlpStandardSettings } = require('../../lib/options');
const { warnOnce, countError } = require('../../lib/report');
const { WARNINGS } = require('../../lib/warnings');

// One exporter package per OTLP protocol (lib/options.js OTLP_PROTOCOLS), as the SDK's own NodeSDK
// picks them (sdk-node getOtlpMetricExporterFromEnv). The exporter packages read the rest of the
// standard variables themselves (OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT, _HEADERS, _TIMEOUT,
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
 * lib/options.js). It is never registered as the global provider, so an SDK the app starts later
 * still can be.
 * @param {object} [options]
 * @param {NodeJS.ProcessEnv} [options.env]
 * @param {Function} [options.lookup] dns.lookup before uvscope wrapped it, for the exporter's own lookups
 * @returns {{ provider: object, settings: object, shutdown(): Promise<void> } | null} null when
 *   OTEL_SDK_DISABLED is true or a package is missing (one warning says which)
 */
function createStandaloneProvider({ env, lookup } = {}) {
  const settings = otlpStandardSettings(env);
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
 * The resource as the SDK builds it by default: telemetry.sdk.*, service.name, then
 * OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME. resources 2.x has functions, 1.x a class.
 */
function resourceFromEnv(resources) {
  if (typeof resources.defaultResource === 'function') {
    return resources.defaultResource().merge(resources.detectResources({ detectors: [resources.envDetector] }));
  }
  return resources.Resource.default().merge(resources.detectResourcesSync({ detectors: [resources.envDetectorSync] }));
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
        warnOnce(WARNINGS.OTLP_EXPORT_FAILED, `uvscope: exporting metrics over OTLP (${settings.protocol}) failed: ${why}. Later failures are counted in uvscope.errors{uvscope.component="exporter:otlp"} and not reported again; the app is not affected.`);
      }
      resultCallback(result);
    });
  };
  return wrapped;
}

module.exports = { createStandaloneProvider, PROTOCOLS };
