'use strict';

const assert = require('node:assert/strict');
const { MeterProvider, PeriodicExportingMetricReader } = require('@opentelemetry/sdk-metrics');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const { createOtlpReceiver } = require('./otlp-receiver');

const EXPORTERS = {
  'http/protobuf': ['http', '@opentelemetry/exporter-metrics-otlp-proto', (e) => `${e}/v1/metrics`],
  'http/json': ['http', '@opentelemetry/exporter-metrics-otlp-http', (e) => `${e}/v1/metrics`],
  grpc: ['grpc', '@opentelemetry/exporter-metrics-otlp-grpc', (e) => e],
};

// The gRPC exporter takes headers as grpc Metadata; the HTTP ones as an object.
function headers(transport, object) {
  if (transport !== 'grpc') return { headers: object };
  const metadata = new (require('@grpc/grpc-js').Metadata)();
  for (const [k, v] of Object.entries(object)) metadata.set(k, v);
  return { metadata };
}

describe('helpers/otlp-receiver: decodes what the real OpenTelemetry exporters send', function () {
  for (const [protocol, [transport, pkg, url]] of Object.entries(EXPORTERS)) {
    it(`${protocol}: names, units, attributes, histogram buckets, gauge values and headers`, async () => {
      const receiver = await createOtlpReceiver({ transport });
      const { OTLPMetricExporter } = require(pkg);
      const exporter = new OTLPMetricExporter({ url: url(receiver.endpoint), ...headers(transport, { 'x-test': 'yes' }) });
      const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60000 });
      const provider = new MeterProvider({ resource: resourceFromAttributes({ 'service.name': 'decode-test' }), readers: [reader] });
      try {
        const meter = provider.getMeter('decode-scope', '1.2.3');
        const h = meter.createHistogram('test.duration', { unit: 's', advice: { explicitBucketBoundaries: [0.1, 1] } });
        for (const v of [0.05, 0.5, 0.7, 3]) h.record(v, { 'test.key': 'a' });
        const g = meter.createObservableGauge('test.gauge', { unit: '{thing}' });
        g.addCallback((r) => r.observe(0, { kind: 'zero' }));
        await provider.forceFlush();
        await receiver.waitFor((r) => r.metrics().length >= 2);
        const rows = receiver.metrics();
        const hist = rows.find((m) => m.name === 'test.duration');
        assert.equal(hist.kind, 'histogram');
        assert.equal(hist.unit, 's');
        assert.deepEqual(hist.resource['service.name'], 'decode-test');
        assert.deepEqual(hist.scope, { name: 'decode-scope', version: '1.2.3' });
        assert.equal(hist.points.length, 1);
        const p = hist.points[0];
        assert.deepEqual(p.attributes, { 'test.key': 'a' });
        assert.deepEqual(p.bounds, [0.1, 1]);
        assert.deepEqual(p.counts, [1, 2, 1]);
        assert.equal(p.count, 4);
        assert.ok(Math.abs(p.sum - 4.25) < 1e-9, String(p.sum));
        assert.equal(p.min, 0.05);
        assert.equal(p.max, 3);
        const gauge = rows.find((m) => m.name === 'test.gauge');
        assert.equal(gauge.kind, 'gauge');
        assert.deepEqual(gauge.points.map((x) => [x.attributes.kind, x.value]), [['zero', 0]]);
        const headers = receiver.requests[0].headers;
        assert.equal(headers['x-test'], 'yes');
      } finally {
        await provider.shutdown().catch(() => {});
        await receiver.close();
      }
    });
  }

  it('reports a body it cannot decode instead of inventing data', async () => {
    const receiver = await createOtlpReceiver();
    try {
      const res = await fetch(`${receiver.endpoint}/v1/metrics`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: Buffer.from([0x0a, 0xff, 0xff]) });
      assert.equal(res.status, 400);
      assert.ok(receiver.requests[0].error);
      assert.deepEqual(receiver.metrics(), []);
    } finally {
      await receiver.close();
    }
  });
});
