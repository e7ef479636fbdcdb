'use strict';

// The one metric catalog, assembled from what each source declares (lib/sources/: its metrics and
// their bucket bounds) plus the agent's own. Every exporter derives its names from here
// mechanically: Prometheus replaces dots with underscores and appends the unit ('s' -> _seconds)
// and, for counters, _total. Attribute names follow OpenTelemetry (dots), Prometheus labels replace
// dots with underscores. A name is written once, in its source's declaration.

const { SOURCES } = require('../sources');
const { metricDef } = require('../sources/metric-def');
const { DNS_BUCKETS } = require('../sources/dns/metrics');
const { QUEUE_WAIT_BUCKETS, JOB_DURATION_BUCKETS } = require('../sources/threadpool/metrics');
const { EVENTLOOP_BUCKETS } = require('../sources/eventloop');
const { CONNECT_BUCKETS } = require('../sources/connections');
const { GC_BUCKETS } = require('../sources/memory');

/** @typedef {import('../sources/metric-def').MetricDef} MetricDef */
/** @typedef {import('../sources/metric-def').PerEvent} PerEvent */

// The agent's own metrics, after every source's.
const AGENT_METRICS = Object.freeze([
  metricDef('uvscope.errors', 'counter', '{error}', ['uvscope.component'],
    'Failures inside uvscope itself, by component; the app is never affected.'),
]);

/** Every source's metrics (lib/sources/index.js, in its order), then the agent's own. @type {readonly MetricDef[]} */
const CATALOG = Object.freeze([...SOURCES.flatMap((s) => s.metrics), ...AGENT_METRICS]);

const BY_NAME = new Map(CATALOG.map((m) => [m.name, m]));

// Attributes carry OpenTelemetry-style names; Prometheus labels and DogStatsD tags use these short
// names (type="GetAddrInfoReqWrap", kind="dns"), and otherwise the name with dots as underscores.
const SHORT_NAMES = Object.freeze({
  'nodejs.uv.handle.type': 'type',
  'nodejs.uv.request.type': 'type',
  'nodejs.uv.threadpool.kind': 'kind',
  'nodejs.uv.threadpool.queue': 'queue',
  'nodejs.eventloop.delay.mode': 'mode',
  'nodejs.uv.threadpool.job.type': 'type',
  'nodejs.uv.threadpool.thread.state': 'state',
  'uvscope.component': 'component',
  'nodejs.net.connect.phase': 'phase',
  'nodejs.http.client': 'client',
  'nodejs.http.connection.reused': 'reused',
  'v8js.gc.type': 'type',
  'process.cpu.budget.source': 'source',
  'process.pid': 'pid',
  'nodejs.cluster.worker.id': 'worker_id',
});

/**
 * The short name of an attribute, for Prometheus labels and DogStatsD tags.
 * @param {string} attribute
 */
function shortName(attribute) {
  return SHORT_NAMES[attribute] || attribute.replace(/[^a-zA-Z0-9_]/g, '_');
}

/**
 * One event's value and attributes for a metric recorded per event (def.perEvent).
 * @param {MetricDef} def
 * @param {Record<string, any>} message the channel's message
 * @returns {{ value: number, attributes: Record<string, string> }}
 */
function eventObservation(def, message) {
  /** @type {Record<string, string>} */
  const attributes = {};
  for (const [attribute, field] of Object.entries(def.perEvent.attributes)) attributes[attribute] = message[field];
  return { value: message[def.perEvent.value], attributes };
}

/**
 * The catalog entry for a canonical name.
 * @param {string} name
 * @returns {MetricDef}
 */
function metric(name) {
  const m = BY_NAME.get(name);
  if (!m) throw new Error(`uvscope: no metric ${name} in the catalog`);
  return m;
}

// The bucket bounds, declared by their sources, re-exported for existing importers.
module.exports = { CATALOG, metric, shortName, eventObservation, CONNECT_BUCKETS, GC_BUCKETS, DNS_BUCKETS, QUEUE_WAIT_BUCKETS, EVENTLOOP_BUCKETS, JOB_DURATION_BUCKETS };
