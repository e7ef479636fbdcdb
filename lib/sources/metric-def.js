'use strict';

// How a source declares the metrics it produces. Each source lists its MetricDefs (and the bucket
// bounds of its histograms) in its own declaration; lib/snapshot/catalog.js assembles them into the
// one catalog every exporter derives its names from.

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

/** dd-trace's runtime metrics (runtime.node.event_loop.*, .heap.*, .gc.*) and OpenTelemetry's
 * instrumentation-runtime-node (nodejs.eventloop.*, v8js.*) send metrics marked with this too. */
const RUNTIME = Object.freeze({ runtimeMetrics: true });

/**
 * One frozen catalog entry.
 * @param {string} name canonical dotted name
 * @param {'gauge'|'counter'|'histogram'} type
 * @param {string} unit
 * @param {string[]} attributes
 * @param {string} help
 * @param {readonly number[]} [buckets] upper bounds, for histograms
 * @param {{ perEvent?: PerEvent, onePerSample?: boolean, intervalGauges?: readonly string[], runtimeMetrics?: boolean }} [more]
 * @returns {Readonly<MetricDef>}
 */
function metricDef(name, type, unit, attributes, help, buckets, more = {}) {
  /** @type {MetricDef} */
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
 * The attributes of a point that has none: one frozen object for every such point of every
 * sample (a sample makes no empty object per point).
 * @type {Readonly<Record<string, string>>}
 */
const NO_ATTRIBUTES = Object.freeze({});

/**
 * A frozen attributes object with one attribute, the same object for the same pair at every
 * sample: for attribute values from a small fixed set (kinds, queues, states), never from the app.
 * @returns {(value: string) => Readonly<Record<string, string>>}
 * @param {string} name the attribute's name
 */
function attributesOf(name) {
  /** @type {Map<string, Readonly<Record<string, string>>>} */
  const made = new Map();
  return (value) => {
    let a = made.get(value);
    if (a === undefined) made.set(value, (a = Object.freeze({ [name]: value })));
    return a;
  };
}

module.exports = { metricDef, RUNTIME, NO_ATTRIBUTES, attributesOf };
