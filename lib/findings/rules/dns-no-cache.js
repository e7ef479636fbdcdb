'use strict';

const { defineRule } = require('../rule');
const { windowSeconds } = require('../window');
const { busyShare, callbackWait } = require('../signals');
const { anyLookups } = require('../hosts');

/**
 * dns-no-cache: one hostname looked up again and again, for long enough, at a cost: nothing
 * caches or coalesces its lookups. A pool warming up (a burst of lookups, then none) or a cron
 * job's short bursts are not it.
 */
module.exports = defineRule({
  id: 'dns-no-cache',
  limits: {
    noCacheMinLookups: 20, // lookups of one name in the window
    noCacheIntervals: 3, // ...spread over at least this many sampling intervals (sustained)
    noCacheSecondsPerSecond: 0.5, // ...that kept callers waiting this long per second of the window
    noCacheQueueWaitPerSecond: 0.05, // ...or waited this long for DNS slots per second
  },
  docs: {
    means: 'one hostname is looked up again and again, and nothing caches or coalesces the lookups',
    fires: (l) => `sustained repetition that costs: one hostname looked up ${l.noCacheMinLookups}+ times in ${l.noCacheIntervals}+ intervals of the window, and callers spent ${l.noCacheSecondsPerSecond} s per second in those lookups or ${l.noCacheQueueWaitPerSecond} s per second waiting for DNS slots because of them (a pool warming up or a cron job's short bursts are not it). Time in intervals where other work held the pool, or where the loop was blocked (as \`eventloop-blocked\` tests an interval), does not count: a lookup is timed to its callback, which then waits for the pool or the loop however fast DNS answers; in other intervals what the loop explains is taken out, the smaller of: the loop's longest delay times its busy share per lookup that called back, and the lookups in flight at most times the seconds the loop was busy (over that interval and the one before: a busy loop, or one waiting for a CPU, runs the callback late too)`,
    impact: 'the time callers spent in those lookups per second of the window; `requests`: the lookups',
    advice: 'names the callers (sampled call sites: the package, e.g. `hot-shots`, or `file:line`); cache and coalesce, give StatsD clients an IP',
    example: 'the lab\'s `klarna` incident (hot-shots with a hostname): "statsd.klarna.test is looked up 1883.2 times a second in 12 of the last 12 intervals, up to 5468 at once, mostly by hot-shots, and callers waited 55.70 s per second for it (53.73 s of that for a DNS slot): nothing caches or coalesces these lookups."',
  },
  state: () => new LoopWaitState(),
  // As an interval enters the window: its lookups' cost, less what the pool and the loop explain.
  enter(summary, state) {
    // While other work holds every pool thread, lookups wait for a thread, not because they are
    // many (threadpool-saturated names the holder): that waiting is not this rule's cost. Likewise
    // while the loop is blocked (the signal eventloop-blocked reads): a lookup is timed from the
    // call to its callback, and the callback waits for the loop however fast DNS answered, so
    // that time is the loop's, which eventloop-blocked names.
    const hosts = summary.hosts;
    if (summary.poolHeld || summary.loopWasBlocked) {
      for (let i = 0; i < hosts.length; i++) hosts[i].noCacheSeconds = hosts[i].noCacheQueueWait = 0;
    } else {
      // In other intervals the callbacks wait for the loop too, only less: what that explains is
      // taken from each lookup (discountLoopWait()).
      const share = busyShare(summary);
      discountLoopWait(hosts, Math.max(callbackWait(summary), state.lastLate), summary.seconds * share, state.lastShare, state.lastSeconds, state.inFlight);
    }
    state.inFlight.update(hosts);
    state.lastLate = callbackWait(summary);
    state.lastShare = busyShare(summary);
    state.lastSeconds = summary.seconds;
  },
  // Nothing to fire on: no lookups (in the summary's hostnames, its bucket's once merged).
  quiet: (s, lim) => !anyLookups(s.hosts) && lim.noCacheMinLookups > 0,
  evaluate(window, lim, { callersOf }) {
    const seconds = windowSeconds(window);
    let heldIntervals = 0;
    for (let i = 0; i < window.length; i++) if (window[i].poolHeld) heldIntervals++;
    // While other work held the pool in the window, the lookups' time is that work's doing
    // (threadpool-saturated names it); the probe sees the hold only when it completes, so intervals
    // just before it count too: no caching claim then.
    if (heldIntervals > 0) return null;
    const hot = repeatedNames(window, lim, seconds);
    if (hot.length === 0) return null;
    // What it says (lib/findings/found/dns-no-cache.js) loads the first time the gate passes.
    return require('../found/dns-no-cache').found(hot, seconds, heldIntervals, window.length, callersOf);
  },
});

// Per-name sums, reused from sample to sample (grown as needed): lookups, seconds, queue wait.
let scratch = new Float64Array(3 * 128);
// A name's slot in scratch: one Map for the engine's life, never cleared while small (Map#clear()
// allocates a new table, and a table that grows again every sample is allocated in old space once
// the Map is there). An entry holds for this call only if slotNames has the name at that slot.
const slotOf = new Map();
const slotNames = [];
let slots = 0;
const SLOTS_MAX = 4096;
const NONE = Object.freeze([]);

// name's slot in this call, or -1.
function slotFor(name) {
  const k = slotOf.get(name);
  return k !== undefined && k < slots && slotNames[k] === name ? k : -1;
}

// The names over the limits, costliest first. Totals per name go to a scratch array first, and
// an object is made only for the names that cross the limits: this runs every sample over every
// kept name. Index loops: in V8's interpreter for...of makes an iterator result per entry.
function repeatedNames(window, lim, seconds) {
  if (slotOf.size > SLOTS_MAX) {
    slotOf.clear();
    slotNames.length = 0;
  }
  slots = 0;
  let totals = scratch;
  for (let w = 0; w < window.length; w++) {
    const hosts = window[w].hosts;
    for (let i = 0; i < hosts.length; i++) {
      const h = hosts[i];
      if (h.name === '_other') continue;
      let k = slotFor(h.name);
      if (k === -1) {
        k = slots++;
        slotOf.set(h.name, k);
        slotNames[k] = h.name;
        if (3 * k + 3 > totals.length) {
          const grown = new Float64Array(2 * totals.length);
          grown.set(totals);
          scratch = totals = grown;
        }
        totals[3 * k] = totals[3 * k + 1] = totals[3 * k + 2] = 0;
      }
      totals[3 * k] += h.lookups;
      totals[3 * k + 1] += h.noCacheSeconds || 0;
      totals[3 * k + 2] += h.noCacheQueueWait || 0;
    }
  }
  // The gate: most samples no name crosses, and nothing more is built.
  let any = false;
  for (let k = 0; k < slots && !any; k++) any = crosses(totals, k, lim, seconds);
  if (!any) return NONE;
  const byName = new Map();
  for (let w = 0; w < window.length; w++) {
    const hosts = window[w].hosts;
    for (let i = 0; i < hosts.length; i++) {
      const h = hosts[i];
      if (h.name === '_other' || !crosses(totals, slotFor(h.name), lim, seconds)) continue;
      let t = byName.get(h.name);
      if (!t) byName.set(h.name, (t = { name: h.name, lookups: 0, intervals: 0, seconds: 0, queueWaitSeconds: 0, duplicates: 0, maxInFlight: 0 }));
      t.lookups += h.lookups;
      t.intervals += h.intervals || 0;
      t.seconds += h.noCacheSeconds || 0;
      t.queueWaitSeconds += h.noCacheQueueWait || 0;
      t.duplicates += h.duplicates;
      t.maxInFlight = Math.max(t.maxInFlight, h.maxInFlight);
    }
  }
  return [...byName.values()]
    .filter((h) => h.lookups >= lim.noCacheMinLookups && h.intervals >= lim.noCacheIntervals
      && (h.seconds / seconds >= lim.noCacheSecondsPerSecond || h.queueWaitSeconds / seconds >= lim.noCacheQueueWaitPerSecond))
    .sort((a, b) => b.seconds - a.seconds);
}

// A name's totals (slot k) cross the limits: enough lookups that kept callers waiting.
function crosses(totals, k, lim, seconds) {
  return totals[3 * k] >= lim.noCacheMinLookups
    && (totals[3 * k + 1] / seconds >= lim.noCacheSecondsPerSecond || totals[3 * k + 2] / seconds >= lim.noCacheQueueWaitPerSecond);
}

// What the cost model keeps from one interval to the next, per engine: the previous interval's
// loop figures (its callbackWait, busy share and length) and each hostname's lookups in flight at the
// previous sample.
class LoopWaitState {
  lastLate = 0;
  lastShare = 0;
  lastSeconds = 0;
  inFlight = new InFlightBefore();
}

/**
 * Takes from each hostname's cost (noCacheSeconds, noCacheQueueWait) what the event loop
 * explains, in an interval the loop was not blocked in (the signal loopWasBlocked). A lookup is
 * timed from the call to its callback, and the callback runs when the loop gets to it, however
 * fast DNS answered: after the rest of the loop's iteration if its answer came while the loop was
 * busy, whatever kept it busy (the app's CPU work, or its thread waiting for a CPU on an
 * overloaded host). Likewise the slot model (lib/sources/dns/slots.js) frees a DNS slot at the
 * callback of the lookup that held it, so a queued lookup's wait holds that too. The loop's part
 * is taken as the smaller of two bounds:
 * - per lookup that called back in the interval (per queued one for the wait), `late`: the
 *   signal callbackWait (the loop's longest delay times its busy share);
 * - the lookups in flight at most times the seconds the loop was busy while they were in
 *   flight: a lookup can only wait for the loop while the loop is busy (many fast lookups on a
 *   loop busy with their own callbacks: each iteration short, the longest delay a GC's). Those
 *   seconds: the interval's, and the last one's over the slowest lookup's time before this one
 *   (at the last one's busy share).
 * A lookup that called back in this interval may have started in the last: `late` is the longer
 * of the two intervals'. What is left is time beyond the loop's, which a cache saves. The lab's
 * zooz (handlers burning 25 ms each, localhost from /etc/hosts) is left with nothing or nearly;
 * klarna (50 ms answers, a loop late by 10 ms and busy 6 % of the time) loses 1.4 % of its
 * seconds; 4 workers looking up one name back to back (0.5 ms answers, a loop busy 30 % with
 * their callbacks, test/findings/engine.test.js) about a third.
 * @param {readonly object[]} hosts an interval's compact host figures (hosts.js compactHosts)
 * @param {number} late seconds per lookup: of this interval or the last, the longer
 * @param {number} busy seconds the loop was busy in this interval
 * @param {number} lastShare the busy share of the last interval
 * @param {number} lastSeconds the last interval's length
 * @param {InFlightBefore} before each hostname's lookups in flight at the last sample
 */
function discountLoopWait(hosts, late, busy, lastShare, lastSeconds, before) {
  if (!(late > 0)) return;
  for (let i = 0; i < hosts.length; i++) {
    const h = hosts[i];
    // The lookups that called back: those in flight at the last sample or started since, less
    // those still in flight (`lookups` counts the lookups started in the interval).
    const calledBack = Math.max(0, h.lookups + before.of(h.name) - h.inFlight);
    const most = h.maxInFlight * (busy + lastShare * Math.min(lastSeconds, h.maxSeconds || 0));
    h.noCacheSeconds = Math.max(0, h.noCacheSeconds - Math.min(calledBack * late, most));
    // (a part of the lookups' time: never more than what is left of it)
    h.noCacheQueueWait = Math.min(h.noCacheSeconds, Math.max(0, h.noCacheQueueWait - Math.min(h.queuedLookups * late, most)));
  }
}

/**
 * Each hostname's lookups in flight at the last sample. A name missing from that sample's active
 * hostnames had none in flight then: lookups in flight at a sample were started in its interval
 * (`lookups` > 0) or were in flight at its start (its `maxInFlight` starts at that count), and
 * either makes the name active. An entry per name, reused; the Map is dropped only past
 * IN_FLIGHT_NAMES_MAX names.
 */
class InFlightBefore {
  #entries = new Map(); // name -> { inFlight, seq }
  #seq = 0;

  /** @param {string} name */
  of(name) {
    const e = this.#entries.get(name);
    return e !== undefined && e.seq === this.#seq ? e.inFlight : 0;
  }

  /** @param {readonly object[]} hosts this sample's compact host figures */
  update(hosts) {
    const entries = this.#entries;
    if (entries.size > IN_FLIGHT_NAMES_MAX) entries.clear();
    const seq = ++this.#seq;
    for (let i = 0; i < hosts.length; i++) {
      const e = entries.get(hosts[i].name);
      if (e !== undefined) {
        e.inFlight = hosts[i].inFlight;
        e.seq = seq;
      } else {
        entries.set(hosts[i].name, { inFlight: hosts[i].inFlight, seq });
      }
    }
  }
}

const IN_FLIGHT_NAMES_MAX = 4096;
