'use strict';

const { defineRule } = require('../rule');
const { tailHosts } = require('../hosts');
const { ms } = require('../../core/format');

/**
 * dns-tail-latency: a hostname's recent p99 lookup far above its median, over enough lookups to
 * say so, and where the slowest lookups spent the extra time: waiting for a DNS slot, waiting for
 * the loop to run their callbacks, or at the resolver.
 */
module.exports = defineRule({
  id: 'dns-tail-latency',
  limits: {
    tailMinLookups: 100, // recent lookups of the name (the DNS sampler's last 60 s)
    tailRatio: 4, // p99 at least this many times p50
    tailExcessS: 0.05, // and at least this far above it
  },
  docs: {
    means: 'a hostname\'s slowest lookups take far longer than its median, and where that tail lives',
    fires: (l) => `a host's p99 lookup is ${l.tailRatio}x its median and ${ms(l.tailExcessS)}+ above it, over ${l.tailMinLookups}+ lookups in the last 60 s. A tail placed at the resolver is not claimed while other work held the pool (threadpool-saturated) or the app's threads waited for a CPU (cpu-starved) in the window: a lookup's time on its thread is not the resolver's then`,
    impact: 'the tail lookups\' time above the median per second of the window; `requests`: the tail lookups',
    advice: 'names the host, p50, p99, standard deviation and where the tail lives: the resolver (no wait for a slot, loop not blocked: a node-local caching resolver, an in-process cache with TTL such as cacheable-lookup, fewer lookups, and hedging), the DNS slots (cache, pool size; no hedging) or the event loop (its callbacks waited)',
    example: 'the lab\'s `numa` incident (every 50th answer after 150 ms): "Lookups of api.numa.test take 4 ms at the median but 152 ms at p99 (standard deviation 27 ms, over 149 lookups); the tail lives in the resolver: the slowest lookups waited 0 ms for a DNS slot and the event loop was never blocked longer than 17 ms, so the time went to the answer itself."',
  },
  // The latest interval's tails only, kept here rather than in the window's summaries: they
  // cover the DNS sampler's last 60 s already, and kept in every summary they cost ~18 KB per
  // kept hostname.
  state: () => ({ tails: null }),
  enter(summary, state, sample) {
    state.tails = tailHosts(sample.details.dns);
  },
  // Nothing to fire on: the latest interval's tails (state, what evaluate() reads) have none.
  quiet: (s, lim, state) => !anyTail(state.tails, lim),
  evaluate(window, lim, context, state) {
    // The gate, every sample: a loop over the latest tails that allocates nothing.
    if (!anyTail(state.tails, lim)) return null;
    // What it says (lib/findings/found/dns-tail-latency.js) loads the first time the gate passes.
    return require('../found/dns-tail-latency').found(window, lim, state.tails, (h) => isTail(h, lim));
  },
});

// A hostname's recent lookups have a tail far above their median, over enough lookups.
function isTail(h, lim) {
  return h.recentLookups >= lim.tailMinLookups && h.p50 !== null && h.p99 >= lim.tailRatio * h.p50 && h.p99 - h.p50 >= lim.tailExcessS;
}

function anyTail(tails, lim) {
  if (!tails) return false;
  for (let i = 0; i < tails.length; i++) if (isTail(tails[i], lim)) return true;
  return false;
}
