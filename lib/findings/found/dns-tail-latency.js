'use strict';

// What dns-tail-latency (lib/findings/rules/dns-tail-latency.js) says once its gate passed (a
// name's recent lookups have a tail): where the tail lives, the summary, evidence and advice.
// Loaded then, not with the rule: most processes never see such a tail.

const { windowSeconds } = require('../window');
const { ms } = require('../../core/format');

/**
 * The finding over the window, its gate passed.
 * @param {object[]} window the window of interval summaries
 * @param {Readonly<Record<string, number>>} lim the limits
 * @param {any[]} tails the latest summary's tails
 * @param {(h: any) => boolean} isTail the rule's test of a name's tail
 * @returns {import('../rule').RuleResult | null}
 */
function found(window, lim, tails, isTail) {
  // Runs at every interval while a tail lasts: no array of the window's length, no copy of each
  // name's details (the name's figures are read from h).
  let loopMax = 0;
  for (let i = 0; i < window.length; i++) {
    const d = window[i].delayMax || 0;
    if (d > loopMax) loopMax = d;
  }
  const heldOrStarved = window.some((s) => s.poolHeld || s.cpuStarved);
  const hot = (tails || [])
    .filter(isTail)
    .map((h) => {
      const excess = h.tail.meanSeconds - h.p50;
      // Where the slowest lookups spent their extra time: waiting for a DNS slot, waiting for the
      // loop to run their callbacks (a loop delay as long as the excess), or at the resolver.
      const place = h.tail.queueWaitSeconds >= excess / 2 ? 'dns-slots' : loopMax >= excess / 2 ? 'event-loop' : 'resolver';
      return { h, excess, place };
    })
    // While other work held the pool (threadpool-saturated), lookups waited for a thread that the
    // DNS-slot replay does not see; while the app's threads waited for a CPU (cpu-starved), a
    // lookup's time on its thread was partly waiting for a CPU. Either way that tail is not the
    // resolver's, so no resolver claim (and no hedging advice) is made then; the other rule
    // names the cause.
    .filter((x) => x.place !== 'resolver' || !heldOrStarved)
    .sort((a, b) => b.h.tail.lookups * b.excess - a.h.tail.lookups * a.excess);
  if (hot.length === 0) return null;
  const seconds = windowSeconds(window);
  const { h, place } = hot[0];
  const cost = hot.reduce((a, x) => a + x.h.tail.lookups * x.excess, 0);
  return {
    summary: `Lookups of ${h.name} take ${ms(h.p50)} at the median but ${ms(h.p99)} at p99 (standard deviation ${ms(h.stddev)}, over ${h.recentLookups} lookups); the tail lives in ${where(h, place, loopMax)}.`,
    evidence: {
      place,
      maxEventLoopDelaySeconds: loopMax,
      hostnames: hot.slice(0, 10).map(({ h: x, place: xPlace }) => ({
        name: x.name,
        lookups: x.recentLookups,
        p50: x.p50,
        p99: x.p99,
        stddev: x.stddev,
        mean: x.mean,
        place: xPlace,
        // A copy: the sampler updates a name's tail in place at the next sample (lib/sources/dns/sampler.js).
        tail: { ...x.tail },
      })),
    },
    advice: adviceFor(h, place),
    impact: { secondsPerSecond: cost / seconds, requests: hot.reduce((a, x) => a + x.h.tail.lookups, 0), score: cost / seconds },
  };
}

function where(h, place, loopMax) {
  if (place === 'resolver') return `the resolver: the slowest lookups waited ${ms(h.tail.queueWaitSeconds)} for a DNS slot and the event loop was never blocked longer than ${ms(loopMax)}, so the time went to the answer itself`;
  if (place === 'dns-slots') return `the DNS slots: the slowest lookups waited ${ms(h.tail.queueWaitSeconds)} of their ${ms(h.tail.meanSeconds)} for one of the threadpool's DNS slots`;
  return `the event loop: the slowest lookups waited ${ms(h.tail.queueWaitSeconds)} for a DNS slot, but the loop was blocked for up to ${ms(loopMax)}, so their answers waited for the loop to run the callbacks`;
}

function adviceFor(h, place) {
  if (place === 'resolver') {
    return [
      'Answer repeated names close by: a node-local caching resolver (NodeLocal DNSCache, dnsmasq, systemd-resolved) or an in-process cache with TTL (cacheable-lookup, undici\'s interceptors.dns) takes most lookups, and their tail, off the path.',
      'Make fewer lookups: keep-alive connections look a name up per connection, not per request.',
      `Since the resolver itself is the tail and its spikes look random, hedging helps: if no answer came within about the median (${ms(h.p50)}), send a second query and take the first answer (as in "The Tail at Scale"). It only cuts random spikes; it does not help a resolver that is slow all the time.`,
    ];
  }
  if (place === 'dns-slots') {
    return [
      'The tail is the wait for a DNS slot, not the resolver: cache and coalesce lookups (cacheable-lookup, undici\'s interceptors.dns) or raise UV_THREADPOOL_SIZE (see threadpool-dns-saturated).',
      'Do not hedge: a second query per slow lookup adds to the very queue that makes it slow.',
    ];
  }
  return [
    'The tail is the event loop, not DNS: find what blocks it (see eventloop-blocked) and move that work off the loop.',
    'A faster resolver or hedging would not help: the answers came in time and waited for the loop.',
  ];
}

module.exports = { found };
