'use strict';

const assert = require('node:assert/strict');
const { resolveOptions } = require('../../lib/agent/options');
const { otlpStandardSettings: standardSettings } = require('../../exporters/otlp/manifest');
const { standaloneSettings, EXPORT_TIMEOUT_MAX_MS } = require('../../exporters/otlp/standalone');
const { collectWarnings: warnings } = require('../helpers/source');

describe('exporters/otlp settings', function () {
  it('UVSCOPE_OTLP_MODE, UVSCOPE_OTLP_RUNTIME_METRICS and UVSCOPE_OTLP_TRACE_ATTRIBUTES: defaults, environment, options winning over it', () => {
    assert.deepEqual(resolveOptions({}, {}).otlp, { mode: 'auto', runtimeMetrics: 'auto', traceAttributes: true });
    assert.deepEqual(resolveOptions({}, { UVSCOPE_OTLP_MODE: ' Companion ', UVSCOPE_OTLP_RUNTIME_METRICS: 'false', UVSCOPE_OTLP_TRACE_ATTRIBUTES: 'off' }).otlp, { mode: 'companion', runtimeMetrics: 'off', traceAttributes: false });
    assert.equal(resolveOptions({ otlp: { traceAttributes: true } }, { UVSCOPE_OTLP_TRACE_ATTRIBUTES: 'false' }).otlp.traceAttributes, true);
    assert.equal(resolveOptions({ otlp: { mode: 'standalone' } }, { UVSCOPE_OTLP_MODE: 'companion' }).otlp.mode, 'standalone');
    assert.deepEqual(resolveOptions({}, { UVSCOPE_EXPORTERS: 'otlp,prometheus' }).exporters, ['otlp', 'prometheus']);
  });

  it('a bad value warns, naming the variable, the value and what is accepted, and uses the default', () => {
    const { result, seen } = warnings(() => resolveOptions({}, { UVSCOPE_OTLP_MODE: 'sidecar-test', UVSCOPE_OTLP_RUNTIME_METRICS: 'constructor' }));
    assert.deepEqual(result.otlp, { mode: 'auto', runtimeMetrics: 'auto', traceAttributes: true });
    assert.ok(seen.some((w) => /UVSCOPE_OTLP_MODE="sidecar-test" is not valid: expected auto .*companion or standalone; using auto/.test(w.message)), JSON.stringify(seen));
    assert.ok(seen.some((w) => /UVSCOPE_OTLP_RUNTIME_METRICS="constructor" is not valid/.test(w.message)), JSON.stringify(seen));
  });

  it('standard variables: protocol (metrics-specific first), interval, timeout clamped to the interval, OTEL_SDK_DISABLED', () => {
    assert.deepEqual(standardSettings({}), { disabled: false, protocol: 'http/protobuf', intervalMs: 60000, timeoutMs: 30000 });
    assert.equal(standardSettings({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }).protocol, 'grpc');
    assert.equal(standardSettings({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json' }).protocol, 'http/json');
    assert.deepEqual(standardSettings({ OTEL_METRIC_EXPORT_INTERVAL: '5000' }), { disabled: false, protocol: 'http/protobuf', intervalMs: 5000, timeoutMs: 5000 });
    assert.equal(standaloneSettings({}).exportTimeoutMs, EXPORT_TIMEOUT_MAX_MS);
    // One export attempt: the standard timeout variables (metrics-specific first), the interval, and
    // at most EXPORT_TIMEOUT_MAX_MS (below the SDK's first retry back-off of 800-1200 ms).
    assert.equal(EXPORT_TIMEOUT_MAX_MS < 800, true);
    assert.equal(standaloneSettings({ OTEL_EXPORTER_OTLP_TIMEOUT: '300' }).exportTimeoutMs, 300);
    assert.equal(standaloneSettings({ OTEL_EXPORTER_OTLP_TIMEOUT: '300', OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: '400' }).exportTimeoutMs, 400);
    assert.equal(standaloneSettings({ OTEL_METRIC_EXPORT_INTERVAL: '100' }).exportTimeoutMs, 100);
    assert.equal(standardSettings({ OTEL_SDK_DISABLED: 'true' }).disabled, true);
    const { result, seen } = warnings(() => standardSettings({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/thrift-test', OTEL_METRIC_EXPORT_INTERVAL: '-5' }));
    assert.equal(result.protocol, 'http/protobuf');
    assert.equal(result.intervalMs, 60000);
    assert.ok(seen.some((w) => /OTEL_EXPORTER_OTLP_PROTOCOL="http\/thrift-test" is not valid: expected http\/protobuf, http\/json, grpc; using http\/protobuf/.test(w.message)), JSON.stringify(seen));
    assert.ok(seen.some((w) => /OTEL_METRIC_EXPORT_INTERVAL="-5" is not valid/.test(w.message)), JSON.stringify(seen));
  });
});
