'use strict';

// The one metric catalog. Every exporter derives its names from here mechanically:
// Prometheus replaces dots with underscores and appends the unit ('s' -> _seconds) and, for
// counters, _total. Attribute names follow OpenTelemetry (dots), Prometheus labels replace dots
// with underscores. A name is written once, here.

/** Upper bounds for DNS lookup durations. (4, 6] and (9, 11] hold lookups that waited one or two
 * resolv.conf timeouts of 5 s (glibc's default), so resolver timeouts stand apart from slow answers. */
const DNS_BUCKETS = Object.freeze([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 4, 6, 9, 11, 20, 30]);

/** Upper bounds for threadpool queue wait, from a free thread (~0.1 ms) to a long backlog. */
const QUEUE_WAIT_BUCKETS = Object.freeze([0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);

/** Upper bounds for event-loop delay (lateness of a 10 ms timer). */
const EVENTLOOP_BUCKETS = Object.freeze([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);

/** Upper bounds for outgoing connect phases (DNS lookup, TCP handshake). */
const CONNECT_BUCKETS = Object.freeze([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 4, 6, 9, 11, 20, 30]);

/** Upper bounds for GC pauses. */
const GC_BUCKETS = Object.freeze([0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]);

/**
 * @typedef {object} MetricDef
 * @property {string} name canonical dotted name
 * @property {'gauge'|'counter'|'histogram'} type
 * @property {string} unit UCUM unit ('s', '1', '{request}', ...)
 * @property {readonly string[]} attributes attribute names (OpenTelemetry style)
 * @property {string} help
 * @property {readonly number[]} [buckets]
 */

/** @type {readonly MetricDef[]} */
const CATALOG = Object.freeze([
  def('nodejs.uv.handles.active', 'gauge', '{handle}', ['nodejs.uv.handle.type'],
    'Active libuv handles keeping the loop alive, by type, from process.getActiveResourcesInfo().'),
  def('nodejs.uv.requests.active', 'gauge', '{request}', ['nodejs.uv.request.type'],
    'Active libuv requests by type (GetAddrInfoReqWrap is a pending dns.lookup), from process.getActiveResourcesInfo().'),
  def('nodejs.uv.threadpool.size', 'gauge', '{thread}', [],
    'Threads in the libuv threadpool (UV_THREADPOOL_SIZE parsed and clamped as libuv does: default 4, 1 to 1024).'),
  def('nodejs.uv.threadpool.dns_slots', 'gauge', '{thread}', [],
    'Threads that may run getaddrinfo/getnameinfo at once: libuv caps slow I/O at (size+1)/2.'),
  def('nodejs.uv.threadpool.pending', 'gauge', '{request}', ['nodejs.uv.threadpool.kind'],
    'Threadpool work submitted and not completed, as far as Node shows it (kind dns: lookups, fs: file system requests).'),
  def('nodejs.uv.threadpool.queued', 'gauge', '{request}', ['nodejs.uv.threadpool.kind'],
    'Estimated threadpool work waiting for a thread: pending beyond what the pool (and its DNS slots) can run at once.'),
  def('nodejs.uv.threadpool.queue_wait', 'histogram', 's', ['nodejs.uv.threadpool.queue'],
    'Time a probe job waited for the threadpool, measured by one cheap job at a time per queue (dns: a getaddrinfo of localhost; work: a 1-byte crypto.randomFill).',
    QUEUE_WAIT_BUCKETS),
  def('uvscope.probe.in_flight', 'gauge', '{request}', ['nodejs.uv.threadpool.queue'],
    'uvscope\'s own threadpool probe still running at sampling time (0 or 1); it is included in the pending and queued figures.'),
  def('nodejs.eventloop.delay', 'histogram', 's', [],
    'Event-loop delay: how late a 10 ms timer fired (the sampling resolution is subtracted).',
    EVENTLOOP_BUCKETS),
  def('nodejs.eventloop.delay.min', 'gauge', 's', [], 'Smallest event-loop delay in the last sampling interval.'),
  def('nodejs.eventloop.delay.max', 'gauge', 's', [], 'Largest event-loop delay in the last sampling interval.'),
  def('nodejs.eventloop.delay.mean', 'gauge', 's', [], 'Mean event-loop delay in the last sampling interval.'),
  def('nodejs.eventloop.delay.p50', 'gauge', 's', [], 'Median event-loop delay in the last sampling interval.'),
  def('nodejs.eventloop.delay.p90', 'gauge', 's', [], '90th percentile event-loop delay in the last sampling interval.'),
  def('nodejs.eventloop.delay.p99', 'gauge', 's', [], '99th percentile event-loop delay in the last sampling interval.'),
  def('nodejs.eventloop.utilization', 'gauge', '1', [],
    'Fraction of the last sampling interval the event loop was busy (performance.eventLoopUtilization).'),
  def('dns.lookup.duration', 'histogram', 's', ['dns.question.name', 'error.type'],
    'Duration of each dns.lookup (getaddrinfo) made by the app, by hostname (bounded; the rest under _other) and error code (empty on success).',
    DNS_BUCKETS),
  def('nodejs.dns.lookup.queue_wait', 'histogram', 's', ['dns.question.name'],
    'The part of each dns.lookup spent waiting for one of the threadpool\'s DNS slots ((size+1)/2 threads run getaddrinfo), by hostname (the same bounded names as dns.lookup.duration); the rest of the lookup is resolving. Estimated from every lookup\'s start and end (see README).',
    QUEUE_WAIT_BUCKETS),
  def('nodejs.net.connect.duration', 'histogram', 's', ['nodejs.net.connect.phase'],
    'Outgoing TCP connections: time from the socket\'s creation to its lookup event (phase dns) and from there to connect (phase tcp; from creation when no lookup was needed).',
    CONNECT_BUCKETS),
  def('nodejs.http.client.requests', 'counter', '{request}', ['nodejs.http.client', 'nodejs.http.connection.reused'],
    'Outgoing HTTP requests by client (http: http/https modules; fetch: undici) and whether they reused a kept-alive connection.'),
  def('v8js.memory.heap.limit', 'gauge', 'By', [], 'V8 heap size limit (--max-old-space-size and the young generation).'),
  def('nodejs.memory.constrained', 'gauge', 'By', [],
    'Memory the process may use under its cgroup (container) limit, from process.constrainedMemory(); absent when there is no limit.'),
  def('v8js.gc.duration', 'histogram', 's', ['v8js.gc.type'], 'Garbage-collection pauses by kind (major, minor, incremental, weakcb).', GC_BUCKETS),
  def('uvscope.errors', 'counter', '{error}', ['uvscope.component'],
    'Failures inside uvscope itself, by component; the app is never affected.'),
]);

const BY_NAME = new Map(CATALOG.map((m) => [m.name, m]));

// Attributes carry OpenTelemetry-style names; Prometheus labels and DogStatsD tags use these short
// names (type="GetAddrInfoReqWrap", kind="dns"), and otherwise the name with dots as underscores.
const SHORT_NAMES = Object.freeze({
  'nodejs.uv.handle.type': 'type',
  'nodejs.uv.request.type': 'type',
  'nodejs.uv.threadpool.kind': 'kind',
  'nodejs.uv.threadpool.queue': 'queue',
  'uvscope.component': 'component',
  'nodejs.net.connect.phase': 'phase',
  'nodejs.http.client': 'client',
  'nodejs.http.connection.reused': 'reused',
  'v8js.gc.type': 'type',
});

/**
 * The short name of an attribute, for Prometheus labels and DogStatsD tags.
 * @param {string} attribute
 */
function shortName(attribute) {
  return SHORT_NAMES[attribute] || attribute.replace(/[^a-zA-Z0-9_]/g, '_');
}

function def(name, type, unit, attributes, help, buckets) {
  return Object.freeze({ name, type, unit, attributes: Object.freeze(attributes), help, buckets });
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

module.exports = { CATALOG, metric, shortName, CONNECT_BUCKETS, GC_BUCKETS, DNS_BUCKETS, QUEUE_WAIT_BUCKETS, EVENTLOOP_BUCKETS };
