'use strict';

const { defineRule } = require('../rule');
const { signalLimits } = require('../signals');
const { poolHeldRun } = require('../pool');
const { ms } = require('../../core/format');

/**
 * threadpool-dns-saturated: lookups queue for the (size+1)/2 DNS slots of the threadpool while
 * the rest of the pool is free, in enough intervals; with the pool size that covers the peak.
 */
module.exports = defineRule({
  id: 'threadpool-dns-saturated',
  limits: {
    ...signalLimits('dnsWaitS'), // the signal dnsQueued reads it (lib/findings/signals.js)
    dnsSaturatedIntervals: 2, // ...in at least this many intervals of the window
  },
  docs: {
    means: 'lookups queue for the threadpool\'s DNS slots: getaddrinfo may run on at most (size+1)/2 threads at once',
    fires: (l) => `lookups queue for a DNS slot in ${l.dnsSaturatedIntervals}+ intervals: \`queued{kind="dns"}\` > 0 and the dns probe waited ${ms(l.dnsWaitS)} beyond the loop's own delay (or is still waiting), while a thread outside the DNS slots was free (the \`work\` probe did not wait ${ms(l.poolWaitS)}); otherwise the lookups wait behind other work and \`threadpool-saturated\` says which`,
    impact: 'the lookups\' wait for a DNS slot per second of the window; `requests`: the lookups that found every slot taken',
    advice: 'the `UV_THREADPOOL_SIZE` that would have covered the peak of concurrent lookups; cache/coalesce; keep-alive',
    example: 'the lab\'s `wolt` incident (32 clients, 20 upstream names, pool 4): "DNS lookups queue for the threadpool: up to 32 lookups pending for 2 DNS slots (UV_THREADPOOL_SIZE=4), 30 waiting, probe waited up to 496 ms."',
  },
  // Nothing to fire on: no lookups queued for a DNS slot (the signal dnsQueued).
  quiet: (s, lim) => !s.dnsQueued && lim.dnsSaturatedIntervals > 0,
  evaluate(window, lim) {
    // Other work held the pool in the window (threadpool-saturated names it): no DNS claim then.
    // One interval whose work probe waited is a host short of CPU for a moment, as that rule
    // reads it: the probe sees a hold only when it completes, so the intervals next to it can look
    // like a DNS queue, and they are left out, not the window. The gate runs every sample: loops
    // that allocate nothing; the figures only once it passes.
    if (poolHeldRun(window) >= lim.poolSaturatedIntervals) return null;
    let queued = 0;
    for (let i = 0; i < window.length; i++) if (window[i].dnsQueued && !nextToHeld(window, i)) queued++;
    if (queued < lim.dnsSaturatedIntervals) return null;
    // What it says (lib/findings/found/threadpool-dns-saturated.js) loads the first time the gate passes.
    return require('../found/threadpool-dns-saturated').found(window, window.filter((s, i) => s.dnsQueued && !nextToHeld(window, i)));
  },
});

// Whether an interval next to interval i had no free pool thread (the signal poolHeld).
function nextToHeld(window, i) {
  return (i > 0 && window[i - 1].poolHeld) || (i + 1 < window.length && window[i + 1].poolHeld);
}
