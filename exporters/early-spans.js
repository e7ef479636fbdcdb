'use strict';

// What the OTLP and Datadog exporters do in the preload (their early()): put uvscope's context on
// the app's dns.lookup spans (otlp/spans.js, datadog/spans.js), from the app's first lookup on.

const { readSetting } = require('../lib/core/setting');
const { UV_THREADPOOL_SIZE } = require('../lib/core/libuv');
const { findPoint } = require('../lib/snapshot/snapshot');

/**
 * An exporter's early work: its span helper, made when its setting is on, with the start channel
 * of the app's lookups and the threadpool size in effect.
 * @template {{ close(): void }} S
 * @param {import('./index').ExporterContext} context
 * @param {boolean} on the exporter's setting (UVSCOPE_OTLP_TRACE_ATTRIBUTES, UVSCOPE_DATADOG_TRACE_TAGS)
 * @param {(options: { startChannel: import('diagnostics_channel').Channel, poolSize: () => number }) => S} create
 * @returns {{ spans: S | null, close(): void }}
 */
function earlySpans(context, on, create) {
  const { dnsLookupStart: startChannel } = context.channels.published;
  const spans = on ? create({ startChannel, poolSize: () => poolSize(context.latest()) }) : null;
  return {
    spans,
    close() {
      if (spans) spans.close();
    },
  };
}

/**
 * The threadpool size in effect: the last snapshot's, else the setting.
 * @param {import('../lib/snapshot/snapshot').Snapshot | null} latest
 * @returns {number}
 */
function poolSize(latest) {
  if (latest) {
    const p = /** @type {{ value?: number } | undefined} */ (findPoint(latest.points, 'nodejs.uv.threadpool.size'));
    if (p && p.value !== undefined) return p.value;
  }
  return readSetting(UV_THREADPOOL_SIZE);
}

module.exports = { earlySpans, poolSize };
