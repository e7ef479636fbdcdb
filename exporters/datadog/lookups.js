'use strict';

const { tag } = require('./series');
const { reportError } = require('../../lib/report');
const { injectFault } = require('../../lib/faults');

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
 * Every app lookup as one DogStatsD distribution value of dns.lookup.duration (seconds), tagged
 * dns_question_name (bounded like the Prometheus label) and error_type (on failure), so Datadog
 * computes percentiles across hosts. Above maxPerSecond lookups a second they are sampled with a
 * sample rate, never dropped silently.
 *
 * @param {object} options
 * @param {{distribution: Function}} options.sink
 * @param {import('diagnostics_channel').Channel} options.channel uvscope:dns.lookup:end
 * @param {number} options.maxPerSecond
 * @param {() => number} [options.now]
 */
function createLookupDistributions({ sink, channel, maxPerSecond, now = Date.now }) {
  let windowStart = -Infinity;
  let seen = 0;
  let lastSeen = 0;

  function onEnd(msg) {
    try {
      injectFault('channel:datadog.lookups');
      const t = now();
      if (t - windowStart >= 1000) {
        lastSeen = t - windowStart < 2000 ? seen : 0;
        windowStart = t;
        seen = 0;
      }
      seen++;
      const tags = [tag('dns_question_name', msg.name)];
      if (msg.errorType) tags.push(tag('error_type', msg.errorType));
      sink.distribution('dns.lookup.duration', msg.seconds, sampleRate(maxPerSecond, Math.max(seen, lastSeen)), tags);
    } catch (err) {
      reportError('exporter:datadog', err);
    }
  }

  channel.subscribe(onEnd);
  return {
    close() {
      channel.unsubscribe(onEnd);
    },
  };
}

module.exports = { createLookupDistributions, sampleRate };
