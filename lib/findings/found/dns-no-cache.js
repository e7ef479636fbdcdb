'use strict';

// What dns-no-cache (lib/findings/rules/dns-no-cache.js) says once its gate passed (names looked
// up again and again, keeping callers waiting): the summary, evidence, advice and impact. Loaded
// then, not with the rule: an app that caches its lookups never needs it.

const { ms, round } = require('../../core/format');

/**
 * The finding, its gate passed.
 * @param {readonly any[]} hot the names over the limits, costliest first
 * @param {number} seconds the window's length
 * @param {number} heldIntervals intervals in which other work held the pool (0 here)
 * @param {number} intervals the window's intervals
 * @param {(name: string) => any[]} callersOf sampled call sites of a name
 * @returns {import('../rule').RuleResult}
 */
function found(hot, seconds, heldIntervals, intervals, callersOf) {
  const worst = hot[0];
  // Lookups that start on a later tick (dgram's first send, say) have no app frame on the stack.
  const who = callersOf(worst.name).find((c) => c.caller !== '(unknown)');
  const lookups = hot.reduce((a, h) => a + h.lookups, 0);
  const lost = hot.reduce((a, h) => a + h.seconds, 0);
  return {
    summary: `${worst.name} is looked up ${(worst.lookups / seconds).toFixed(1)} times a second in ${worst.intervals} of the last ${intervals} intervals${worst.maxInFlight > 1 ? `, up to ${worst.maxInFlight} at once` : ''}${who ? `, mostly by ${who.caller}` : ''}, and callers waited ${ms(worst.seconds / seconds)} per second for it${worst.queueWaitSeconds > 0.001 ? ` (${ms(worst.queueWaitSeconds / seconds)} of that for a DNS slot)` : ''}: nothing caches or coalesces these lookups.`,
    evidence: {
      windowSeconds: round(seconds),
      // ruled out: intervals when other work held every pool thread (their waiting is not counted)
      intervalsPoolHeld: heldIntervals,
      hostnames: hot.slice(0, 10).map((h) => ({
        name: h.name,
        lookups: h.lookups,
        lookupsPerSecond: round(h.lookups / seconds),
        intervals: h.intervals,
        lookupSecondsPerSecond: round(h.seconds / seconds, 3),
        queueWaitSecondsPerSecond: round(h.queueWaitSeconds / seconds, 3),
        // lookups started while another lookup of the same name was in flight (one would do)
        concurrentDuplicates: h.duplicates,
        maxInFlight: h.maxInFlight,
        callers: callersOf(h.name).slice(0, 5),
      })),
    },
    advice: [
      'Cache lookups per hostname for their TTL and let concurrent callers share one lookup (for example cacheable-lookup as the lookup function of your HTTP agents, or undici\'s interceptors.dns).',
      'Give StatsD/metrics clients an IP address or a client-side DNS cache: a hostname there means one lookup per packet.',
      'Reuse connections (keep-alive) so connections, not requests, pay for lookups.',
    ],
    impact: { secondsPerSecond: lost / seconds, requests: lookups, score: lost / seconds },
  };
}

module.exports = { found };
