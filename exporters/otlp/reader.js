'use strict';

const { reportError } = require('../../lib/core/errors');

/**
 * The reader of uvscope's own MeterProvider: collects and exports every intervalMs like the SDK's
 * PeriodicExportingMetricReader, but never holds the process. Its timer is unref'd and the next
 * export is scheduled only once the previous one ended (a setTimeout chain, not an interval), so
 * an export that ends after the app's work cannot start another; and no referenced timeout races
 * the export (PeriodicExportingMetricReader's callWithTimeout is a referenced setTimeout of up to
 * the interval): the exporter's own timeout bounds each export.
 *
 * MetricReader is the SDK's public base class for readers (sdk-metrics 2.x and 3.x).
 * @param {typeof import('@opentelemetry/sdk-metrics')} sdk
 * @param {object} options
 * @param {object} options.exporter a PushMetricExporter
 * @param {number} options.intervalMs
 * @param {number} options.timeoutMs collection timeout
 * @returns {object} a MetricReader
 */
function createReader(sdk, { exporter, intervalMs, timeoutMs }) {
  class UnrefPeriodicReader extends sdk.MetricReader {
    constructor() {
      super({
        aggregationSelector: exporter.selectAggregation ? exporter.selectAggregation.bind(exporter) : undefined,
        aggregationTemporalitySelector: exporter.selectAggregationTemporality ? exporter.selectAggregationTemporality.bind(exporter) : undefined,
      });
      this.timer = null;
      this.ongoing = null;
      this.stopped = false;
    }

    onInitialized() {
      this.schedule();
    }

    // Every intervalMs from the start of the previous export (as the SDK's reader does), but not
    // before it ended.
    schedule(delayMs = intervalMs) {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        this.timer = null;
        const started = Date.now();
        this.run().then(() => this.schedule(Math.max(0, intervalMs - (Date.now() - started))));
      }, delayMs);
      this.timer.unref();
    }

    /** One collect and export; never rejects. Resolves true when the export succeeded. */
    run() {
      if (this.ongoing) return this.ongoing;
      this.ongoing = this.collectAndExport()
        .catch((err) => {
          reportError('exporter:otlp', err);
          return false;
        })
        .finally(() => {
          this.ongoing = null;
        });
      return this.ongoing;
    }

    async collectAndExport() {
      const { resourceMetrics } = await this.collect({ timeoutMillis: timeoutMs });
      if (resourceMetrics.resource && resourceMetrics.resource.asyncAttributesPending && resourceMetrics.resource.waitForAsyncAttributes) {
        await resourceMetrics.resource.waitForAsyncAttributes();
      }
      if (resourceMetrics.scopeMetrics.length === 0) return true;
      const result = await new Promise((resolve) => exporter.export(resourceMetrics, resolve));
      return Boolean(result && result.code === 0);
    }

    async onForceFlush() {
      if (this.ongoing) await this.ongoing;
      await this.run();
      if (typeof exporter.forceFlush === 'function') await exporter.forceFlush();
    }

    async onShutdown() {
      this.stopped = true;
      clearTimeout(this.timer);
      await this.onForceFlush();
      await exporter.shutdown();
    }
  }
  return new UnrefPeriodicReader();
}

module.exports = { createReader };
