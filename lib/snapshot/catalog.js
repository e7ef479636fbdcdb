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

/** Upper bounds for a threadpool job's time from submission to callback (queue wait and run). */
const JOB_DURATION_BUCKETS = Object.freeze([0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]);

/** Upper bounds for event-loop delay (lateness of a 10 ms timer). */
const EVENTLOOP_BUCKETS = Object.freeze([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);

/** Upper bounds for outgoing connect phases (DNS lookup, TCP handshake). */
const CONNECT_BUCKETS = Object.freeze([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 4, 6, 9, 11, 20, 30]);

/** Upper bounds for GC pauses. */
const GC_BUCKETS = Object.freeze([0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]);

/**
 * How a histogram is recorded one event at a time: each message on a channel uvscope publishes
 * (lib/core/channels.js) is one observation. Exporters that take single values (OTLP histograms,
 * DogStatsD distributions) record from here rather than from the snapshot's buckets.
 * @typedef {object} PerEvent
 * @property {string} channel a key of lib/core/channels.js `published`
 * @property {string} value the message field holding the observed value (in the metric's unit)
 * @property {Readonly<Record<string, string>>} attributes attribute name -> message field
 */

/**
 * One metric. Besides its kind, unit and attributes, the fields below are what exporters derive
 * their rules from (never a list of names of their own):
 * - perEvent: recorded per event from a channel (OTLP: a histogram observation each; DogStatsD: a
 *   distribution value each).
 * - onePerSample: a histogram that gains at most one observation per series between two samples
 *   (a probe), so the difference of two snapshots is that observation, exactly (OTLP records it).
 *   A histogram with neither field reaches the snapshot pre-bucketed only: OTLP, whose API takes
 *   single values, leaves it out rather than replay made-up values.
 * - intervalGauges: the per-interval gauges that carry this histogram where cumulative buckets
 *   cannot go (DogStatsD sends those instead of its count and sum).
 * - runtimeMetrics: a runtime-metrics package the app may already run sends this too, under its
 *   own name (OpenTelemetry's instrumentation-runtime-node; dd-trace's runtime metrics): left out
 *   next to it so nothing is sent twice.
 * @typedef {object} MetricDef
 * @property {string} name canonical dotted name
 * @property {'gauge'|'counter'|'histogram'} type
 * @property {string} unit UCUM unit ('s', '1', '{request}', ...)
 * @property {readonly string[]} attributes attribute names (OpenTelemetry style)
 * @property {string} help
 * @property {readonly number[]} [buckets]
 * @property {Readonly<PerEvent>} [perEvent]
 * @property {boolean} [onePerSample]
 * @property {readonly string[]} [intervalGauges]
 * @property {boolean} [runtimeMetrics]
 */

// dd-trace's runtime metrics (runtime.node.event_loop.*, .heap.*, .gc.*) and OpenTelemetry's
// instrumentation-runtime-node (nodejs.eventloop.*, v8js.*) send these too.
const RUNTIME = Object.freeze({ runtimeMetrics: true });

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
    'Threadpool work submitted and not completed (kind dns: lookups, fs: file system requests, as Node lists them; while the tracer is armed also crypto, zlib and other (addons), counted from their submission).'),
  def('nodejs.uv.threadpool.queued', 'gauge', '{request}', ['nodejs.uv.threadpool.kind'],
    'Estimated threadpool work waiting for a thread: pending beyond what the pool (and its DNS slots) can run at once.'),
  def('nodejs.uv.threadpool.queue_wait', 'histogram', 's', ['nodejs.uv.threadpool.queue'],
    'Time a probe job waited for the threadpool, measured by one cheap job at a time per queue (dns: a getaddrinfo of localhost; work: a 1-byte crypto.randomFill).',
    QUEUE_WAIT_BUCKETS, { onePerSample: true }),
  def('nodejs.uv.threadpool.job.duration', 'histogram', 's', ['nodejs.uv.threadpool.kind', 'nodejs.uv.threadpool.job.type'],
    'Threadpool jobs seen by the tracer while armed, from submission to callback (queue wait plus run), by kind and provider type (PBKDF2REQUEST, ZLIB, FSREQCALLBACK, an addon\'s own name...).',
    JOB_DURATION_BUCKETS, {
      perEvent: { channel: 'threadpoolJobEnd', value: 'seconds', attributes: { 'nodejs.uv.threadpool.kind': 'kind', 'nodejs.uv.threadpool.job.type': 'type' } },
    }),
  def('nodejs.uv.threadpool.busy', 'gauge', '{thread}', ['nodejs.uv.threadpool.thread.state'],
    'Mean pool threads over the last interval from the kernel\'s per-thread CPU accounting (Linux, Node 22+): computing = on a CPU, runnable = ready but waiting for a CPU. runnable is every wait on a run queue, each wake-up\'s own microseconds included: with many very short jobs these alone reach tenths of a thread with no thread short of a CPU (details.threadpool.busy.meanWaitSeconds tells: microseconds per wait are wake-ups, milliseconds are contention).'),
  def('uvscope.tracer.armed', 'gauge', '1', [],
    '1 while the threadpool tracer (async_hooks) is armed, else 0 (UVSCOPE_TRACER=auto arms it when the pool looks saturated).'),
  def('uvscope.probe.in_flight', 'gauge', '{request}', ['nodejs.uv.threadpool.queue'],
    'uvscope\'s own threadpool probe still running at sampling time (0 or 1); it is included in the pending and queued figures.'),
  def('nodejs.eventloop.delay', 'histogram', 's', [],
    'Event-loop delay. Mode iteration (Node 24.19+, 26.5+): how long each loop iteration ran. Mode timer: how late a 10 ms timer fired (the resolution is subtracted). See nodejs.eventloop.delay.mode; the two do not compare.',
    EVENTLOOP_BUCKETS, {
      ...RUNTIME,
      intervalGauges: Object.freeze(['min', 'max', 'mean', 'p50', 'p90', 'p99'].map((s) => `nodejs.eventloop.delay.${s}`)),
    }),
  def('nodejs.eventloop.delay.mode', 'gauge', '1', ['nodejs.eventloop.delay.mode'],
    'How this process samples event-loop delay (always 1; the attribute says it): iteration (one sample per loop iteration, monitorEventLoopDelay({ samplePerIteration }), Node 24.19+ and 26.5+) or timer (a 10 ms timer\'s lateness).'),
  def('nodejs.eventloop.delay.min', 'gauge', 's', [], 'Smallest event-loop delay in the last sampling interval.', undefined, RUNTIME),
  def('nodejs.eventloop.delay.max', 'gauge', 's', [], 'Largest event-loop delay in the last sampling interval.', undefined, RUNTIME),
  def('nodejs.eventloop.delay.mean', 'gauge', 's', [], 'Mean event-loop delay in the last sampling interval.', undefined, RUNTIME),
  def('nodejs.eventloop.delay.p50', 'gauge', 's', [], 'Median event-loop delay in the last sampling interval.', undefined, RUNTIME),
  def('nodejs.eventloop.delay.p90', 'gauge', 's', [], '90th percentile event-loop delay in the last sampling interval.', undefined, RUNTIME),
  def('nodejs.eventloop.delay.p99', 'gauge', 's', [], '99th percentile event-loop delay in the last sampling interval.', undefined, RUNTIME),
  def('nodejs.eventloop.utilization', 'gauge', '1', [],
    'Fraction of the last sampling interval the event loop was busy (performance.eventLoopUtilization).', undefined, RUNTIME),
  def('nodejs.eventloop.iterations', 'counter', '{iteration}', [],
    'Event-loop iterations since the process started (performance.nodeTiming.uvMetricsInfo.loopCount, from libuv\'s uv_metrics_info).'),
  def('nodejs.eventloop.events', 'counter', '{event}', [],
    'I/O events the event loop has processed since the process started (uvMetricsInfo.events).'),
  def('nodejs.eventloop.events.waiting', 'counter', '{event}', [],
    'I/O events that were already waiting when the event loop polled for them, i.e. that arrived while it was busy (uvMetricsInfo.eventsWaiting). Its rate against nodejs.eventloop.events is the share of I/O that found the loop busy.'),
  def('dns.lookup.duration', 'histogram', 's', ['dns.question.name', 'error.type'],
    'Duration of each dns.lookup (getaddrinfo) made by the app, by hostname (bounded; the rest under _other) and error code (empty on success).',
    DNS_BUCKETS, {
      perEvent: { channel: 'dnsLookupEnd', value: 'seconds', attributes: { 'dns.question.name': 'name', 'error.type': 'errorType' } },
    }),
  def('nodejs.dns.lookup.queue_wait', 'histogram', 's', ['dns.question.name'],
    'The part of each dns.lookup spent waiting for one of the threadpool\'s DNS slots ((size+1)/2 threads run getaddrinfo), by hostname (the same bounded names as dns.lookup.duration); the rest of the lookup is resolving. Estimated from every lookup\'s start and end (see README).',
    QUEUE_WAIT_BUCKETS, {
      perEvent: { channel: 'dnsLookupEnd', value: 'queueWaitSeconds', attributes: { 'dns.question.name': 'name' } },
    }),
  def('nodejs.net.connect.duration', 'histogram', 's', ['nodejs.net.connect.phase'],
    'Outgoing TCP connections: time from the socket\'s creation to its lookup event (phase dns) and from there to connect (phase tcp; from creation when no lookup was needed).',
    CONNECT_BUCKETS),
  def('nodejs.http.client.requests', 'counter', '{request}', ['nodejs.http.client', 'nodejs.http.connection.reused'],
    'Outgoing HTTP requests by client (http: http/https modules; fetch: undici) and whether they reused a kept-alive connection.'),
  def('v8js.memory.heap.limit', 'gauge', 'By', [], 'V8 heap size limit (--max-old-space-size and the young generation).', undefined, RUNTIME),
  def('nodejs.memory.constrained', 'gauge', 'By', [],
    'Memory the process may use under its cgroup (container) limit, from process.constrainedMemory(); absent when there is no limit.'),
  def('v8js.gc.duration', 'histogram', 's', ['v8js.gc.type'], 'Garbage-collection pauses by kind (major, minor, incremental, weakcb).', GC_BUCKETS, RUNTIME),
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
  'nodejs.eventloop.delay.mode': 'mode',
  'nodejs.uv.threadpool.job.type': 'type',
  'nodejs.uv.threadpool.thread.state': 'state',
  'uvscope.component': 'component',
  'nodejs.net.connect.phase': 'phase',
  'nodejs.http.client': 'client',
  'nodejs.http.connection.reused': 'reused',
  'v8js.gc.type': 'type',
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

function def(name, type, unit, attributes, help, buckets, more = {}) {
  const d = { name, type, unit, attributes: Object.freeze(attributes), help, buckets };
  if (more.perEvent) {
    const { channel, value, attributes: fields } = more.perEvent;
    d.perEvent = Object.freeze({ channel, value, attributes: Object.freeze({ ...fields }) });
  }
  if (more.onePerSample) d.onePerSample = true;
  if (more.intervalGauges) d.intervalGauges = more.intervalGauges;
  if (more.runtimeMetrics) d.runtimeMetrics = true;
  return Object.freeze(d);
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

module.exports = { CATALOG, metric, shortName, eventObservation, CONNECT_BUCKETS, GC_BUCKETS, DNS_BUCKETS, QUEUE_WAIT_BUCKETS, EVENTLOOP_BUCKETS, JOB_DURATION_BUCKETS };
