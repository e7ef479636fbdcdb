'use strict';

const { CATALOG, metric, shortName } = require('../../lib/snapshot/catalog');

/**
 * How this exporter sends a catalog metric, from its catalog fields (lib/snapshot/catalog.js):
 * 'distribution' one value per event (def.perEvent: exporters/datadog/lookups.js), null when its
 * interval gauges carry it (def.intervalGauges), 'counts' a histogram's count and sum, else
 * 'count' (counters) or 'gauge'.
 * @param {import('../../lib/snapshot/catalog').MetricDef} def
 * @returns {'distribution'|'counts'|'count'|'gauge'|null}
 */
function sendAs(def) {
  if (def.perEvent) return 'distribution';
  if (def.type === 'histogram') return def.intervalGauges ? null : 'counts';
  return def.type === 'counter' ? 'count' : 'gauge';
}

/**
 * A DogStatsD tag value: the characters the protocol uses as separators (| , #), whitespace and
 * ':' in a key become '_'; at most 200 characters, as Datadog keeps.
 * @param {string} key
 * @param {unknown} value
 */
function tag(key, value) {
  const k = String(key).replace(/[|,#:\s]/g, '_');
  const v = String(value).replace(/[|,#\s]/g, '_');
  return `${k}:${v}`.slice(0, 200);
}

/**
 * Per-point tags from a snapshot point's attributes, by their short names (type, kind, queue,
 * component, dns_question_name, error_type). An empty value (error_type on success) is left out.
 * @param {Readonly<Record<string, unknown>>} attributes
 * @returns {string[]}
 */
function tagsOf(attributes) {
  const out = [];
  for (const [k, v] of Object.entries(attributes)) if (v !== '' && v !== undefined && v !== null) out.push(tag(shortName(k), v));
  return out;
}

/**
 * What one flush sends, from a snapshot: every gauge as a gauge; counters, and the count and sum
 * of the threadpool queue-wait histogram, as DogStatsD counts of what happened since the last
 * flush. Lookup durations go per lookup (distributions), not from here.
 *
 * @param {object} options
 * @param {{gauge: Function, count: Function}} options.sink
 * @param {() => boolean} options.eventLoop whether to send what dd-trace's runtime metrics send
 *   too (catalog field runtimeMetrics: event loop, heap, GC) now
 */
function createSeriesFlusher({ sink, eventLoop }) {
  const previous = new Map(); // name + tags -> last cumulative value

  function delta(key, value) {
    const before = previous.get(key) || 0;
    previous.set(key, value);
    return value >= before ? value - before : value; // a reset (never expected) starts over
  }

  return function flush(snapshot) {
    const withEventLoop = eventLoop();
    let sent = 0;
    for (const p of snapshot.points) {
      const def = metric(p.name);
      const as = sendAs(def);
      if (!as || as === 'distribution') continue;
      // dd-trace's runtime metrics send event-loop delay, heap and GC (runtime.node.*) already.
      if (!withEventLoop && def.runtimeMetrics) continue;
      const tags = tagsOf(p.attributes);
      const key = `${p.name}|${tags.join(',')}`;
      if (p.histogram) {
        sink.count(`${p.name}.count`, delta(`${key}|count`, p.histogram.count), tags);
        sink.count(`${p.name}.sum`, delta(`${key}|sum`, p.histogram.sum), tags);
        sent += 2;
      } else if (def.type === 'counter') {
        sink.count(p.name, delta(key, p.value), tags);
        sent++;
      } else if (Number.isFinite(p.value)) {
        sink.gauge(p.name, p.value, tags);
        sent++;
      }
    }
    return sent;
  };
}

/**
 * Every metric name this exporter can send, with its DogStatsD type, derived from the catalog.
 * @returns {{ name: string, type: 'g'|'c'|'d', from: string }[]}
 */
function sentMetrics() {
  /** @type {{ name: string, type: 'g'|'c'|'d', from: string }[]} */
  const out = [];
  for (const m of CATALOG) {
    const as = sendAs(m);
    if (as === 'distribution') out.push({ name: m.name, type: 'd', from: m.name });
    else if (as === 'counts') out.push({ name: `${m.name}.count`, type: 'c', from: m.name }, { name: `${m.name}.sum`, type: 'c', from: m.name });
    else if (as) out.push({ name: m.name, type: as === 'count' ? 'c' : 'g', from: m.name });
  }
  return out;
}

module.exports = { createSeriesFlusher, tagsOf, tag, sentMetrics };
