'use strict';

const { tagsOf } = require('./series');
const { eventObservation } = require('../../lib/snapshot/catalog');
const { safeSubscriber } = require('../../lib/core/channels');
const { injectFault } = require('../../lib/core/faults');

/**
 * The sample rate that keeps about `budget` distribution values per second when `n` lookups were
 * seen in the current (or last) second, rounded down to two significant digits so it reads well
 * on the wire (|@0.034). Datadog scales each sampled value by 1/rate, so counts stay right.
 * @param {number} budget
 * @param {number} n
 */
function sampleRate(budget, n) {
  if (n <= budget) return 1;
  const r = budget / n;
  const step = 10 ** (Math.floor(Math.log10(r)) - 1);
  return Math.max(Number((Math.floor(r / step) * step).toPrecision(2)), 0.0001);
}

/**
 * Every event of a metric recorded per event (catalog field perEvent; today dns.lookup.duration:
 * every app lookup) as one DogStatsD distribution value, tagged by its attributes' short names
 * (dns_question_name, bounded like the Prometheus label; error_type only on failure), so Datadog
 * computes percentiles across hosts. Above maxPerSecond events a second they are sampled with a
 * sample rate, never dropped silently.
 *
 * @param {object} options
 * @param {{distribution: Function}} options.sink
 * @param {import('../../lib/snapshot/catalog').MetricDef} options.def the catalog entry (with perEvent)
 * @param {import('diagnostics_channel').Channel} options.channel its channel (lib/core/channels.js)
 * @param {number} options.maxPerSecond
 * @param {() => number} [options.now]
 */
function createEventDistributions({ sink, def, channel, maxPerSecond, now = Date.now }) {
  let windowStart = -Infinity;
  let seen = 0;
  let lastSeen = 0;

  const onEnd = safeSubscriber('exporter:datadog', (msg) => {
    injectFault('channel:datadog.lookups');
    const t = now();
    if (t - windowStart >= 1000) {
      lastSeen = t - windowStart < 2000 ? seen : 0;
      windowStart = t;
      seen = 0;
    }
    seen++;
    const { value, attributes } = eventObservation(def, msg);
    sink.distribution(def.name, value, sampleRate(maxPerSecond, Math.max(seen, lastSeen)), tagsOf(attributes));
  });

  channel.subscribe(onEnd);
  return {
    close() {
      channel.unsubscribe(onEnd);
    },
  };
}

module.exports = { createEventDistributions, sampleRate };
