'use strict';

const RULES = require('./index');
const { summarize, windowColumns, blockedInInterval } = require('./window');
const { mergeHosts, isActive, HostPool, HOST_BUCKETS } = require('./hosts');
const { poolHeld } = require('./pool');

// The engine's own limits; each rule declares its own (lib/findings/rules/*.js).
const ENGINE_LIMITS = Object.freeze({
  windowMs: 60000,
  // Severity from impact.score (seconds lost per second of the window): at least this much is
  // critical, at least warningScore a warning, less is info.
  criticalScore: 0.5,
  warningScore: 0.02,
});

// The rules that keep figures of their own per interval.
const KEEPING = RULES.filter((r) => r.interval);

/**
 * Every limit by name: the engine's and each rule's. A name is declared once.
 * @type {Readonly<Record<string, number>>}
 */
const LIMITS = Object.freeze(RULES.reduce((all, rule) => {
  for (const name of Object.keys(rule.limits)) {
    if (name in all) throw new Error(`finding rule ${rule.id}: limit ${name} is declared twice`);
  }
  return { ...all, ...rule.limits };
}, { ...ENGINE_LIMITS }));

/**
 * Turns snapshots into findings: { id, severity, summary, evidence, advice, impact }. Keeps a
 * window of per-interval summaries (default 60 s) so a finding reflects a pattern, not one odd
 * sample. impact is what the cause cost in the window: { secondsPerSecond?, requests?,
 * loopBlockedSeconds?, score }, where score is seconds lost per second of the window; severity
 * follows from the score and findings come sorted by it, costliest first.
 */
class FindingsEngine {
  #lim;
  #size;
  #window = [];
  // Callers per hostname, from the latest interval that had them (they are cumulative), kept once
  // rather than in every summary of the window.
  #callers = new Map(); // name -> { callers, time }
  #previous = null;
  #previousTime;
  // The previous interval's loop figures (its longest delay times its busy share, the share, its
  // length) and each hostname's lookups in flight at the previous sample (discountLoopWait()).
  #lastLate = 0;
  #lastShare = 0;
  #lastSeconds = 0;
  #inFlight = new InFlightBefore();
  #context;
  #spareHosts = new HostPool();
  // The summaries' numbers, a row per summary of the full window (lib/core/columns.js).
  #cells;

  /** @param {{ intervalMs: number, startTime?: number, limits?: Partial<typeof LIMITS> }} options */
  constructor({ intervalMs, startTime = Date.now(), limits = {} }) {
    this.#lim = { ...LIMITS, ...limits };
    this.#size = Math.max(1, Math.ceil(this.#lim.windowMs / intervalMs));
    this.#cells = windowColumns(this.#size);
    this.#previousTime = startTime;
    const callers = this.#callers;
    this.#context = { resolver: null, callersOf: (name) => (callers.has(name) ? callers.get(name).callers : []) };
  }

  /**
   * Add one sample's figures and return the findings over the window.
   * @param {{ time: number, points: readonly import('../snapshot/snapshot').Point[], details: import('../snapshot/snapshot').SnapshotDetails }} sample
   * @returns {import('../snapshot/snapshot').Finding[]}
   */
  evaluate(sample) {
    const window = this.#window;
    const lim = this.#lim;
    // A full window's oldest summary leaves it and is overwritten with this interval's figures
    // (its parts too: the rules' own figures, the pool's, the hostnames'): what the window keeps
    // lives for its 60 s, and new objects for it every interval would all survive scavenges.
    const leaving = window.length >= this.#size ? window.shift() : null;
    const summary = summarize(sample, this.#previous, this.#previousTime, leaving, this.#spareHosts, this.#cells);
    if (KEEPING.length) {
      const own = summary.own || (summary.own = {});
      // A rule that reads only the latest interval's figures (latestOnly) is handed the one it
      // kept for the interval before: every summary of the window then holds the same object.
      const before = window.length > 0 ? window[window.length - 1].own : null;
      for (let i = 0; i < KEEPING.length; i++) {
        const rule = KEEPING[i];
        own[rule.id] = rule.interval(sample, rule.latestOnly && before ? before[rule.id] : own[rule.id], summary);
      }
    }
    // Only what the next summary reads of this one (the probes' cumulative waits): keeping the
    // whole sample would keep every hostname's figures alive for one more interval.
    this.#previous = { time: sample.time, points: sample.points.filter((p) => p.name === 'nodejs.uv.threadpool.queue_wait') };
    this.#previousTime = sample.time;
    window.push(summary);
    // dns-tail-latency reads the latest summary's tails only (they cover the sampler's last 60 s
    // already): kept in every summary they cost ~18 KB per kept hostname.
    if (window.length > 1) window[window.length - 2].tails = null;
    // While other work holds every pool thread, lookups wait for a thread, not because they are
    // many (threadpool-saturated names the holder): that waiting is not dns-no-cache's cost.
    summary.poolHeld = Boolean(summary.pool) && poolHeld(summary, lim);
    // Likewise while the loop is blocked (eventloop-blocked's own test of an interval): a lookup
    // is timed from the call to its callback, and the callback waits for the loop however fast
    // DNS answered, so that time is the loop's, which eventloop-blocked names.
    const blocked = blockedInInterval(summary, lim);
    if (summary.poolHeld || blocked > 0) {
      for (let i = 0; i < summary.hosts.length; i++) summary.hosts[i].noCacheSeconds = summary.hosts[i].noCacheQueueWait = 0;
    }
    // In other intervals the callbacks wait for the loop too, only less: what that explains is
    // taken from each lookup (discountLoopWait()).
    const share = busyShare(summary);
    const late = (summary.delayMax || 0) * share;
    if (!summary.poolHeld && blocked === 0) {
      discountLoopWait(summary.hosts, Math.max(late, this.#lastLate), summary.seconds * share, this.#lastShare, this.#lastSeconds, this.#inFlight);
    }
    this.#inFlight.update(summary.hosts);
    this.#lastLate = late;
    this.#lastShare = share;
    this.#lastSeconds = summary.seconds;
    mergeHosts(window, lim.windowMs / HOST_BUCKETS, this.#spareHosts);
    this.#keepCallers(sample);
    this.#context.resolver = sample.details.resolver;
    const found = [];
    for (let i = 0; i < RULES.length; i++) {
      const rule = RULES[i];
      const result = rule.evaluate(window, lim, this.#context);
      if (result) found.push({ id: rule.id, ...result });
    }
    return rankByImpact(found, lim);
  }

  // The latest callers of each active hostname; names gone from the window are dropped.
  #keepCallers(sample) {
    const callers = this.#callers;
    const dnsHosts = (sample.details.dns && sample.details.dns.hosts) || [];
    for (let i = 0; i < dnsHosts.length; i++) {
      const h = dnsHosts[i];
      if (!h.callers || !h.callers.length || !isActive(h)) continue;
      const c = callers.get(h.name);
      if (c) {
        c.callers = h.callers;
        c.time = sample.time;
      } else {
        callers.set(h.name, { callers: h.callers, time: sample.time });
      }
    }
    const oldest = this.#window[0].time;
    callers.forEach((c, name) => {
      if (c.time < oldest) callers.delete(name);
    });
  }
}

/**
 * Takes from each hostname's dns-no-cache cost (noCacheSeconds, noCacheQueueWait) what the event
 * loop explains, in an interval the loop was not blocked in as eventloop-blocked tests it. A
 * lookup is timed from the call to its callback, and the callback runs when the loop gets to it,
 * however fast DNS answered: after the rest of the loop's iteration if its answer came while the
 * loop was busy, whatever kept it busy (the app's CPU work, or its thread waiting for a CPU on an
 * overloaded host). Likewise the slot model (lib/sources/dns/slots.js) frees a DNS slot at the
 * callback of the lookup that held it, so a queued lookup's wait holds that too. The loop's part
 * is taken as the smaller of two bounds:
 * - per lookup that called back in the interval (per queued one for the wait), `late`: the
 *   loop's longest delay (the longest rest of an iteration a callback can wait for) times its
 *   busy share (an answer that came while the loop was idle ran at once);
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
 * @param {readonly object[]} hosts an interval's compact host figures (window.js compactHosts)
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
 * The share of the interval the loop was busy (its utilization; busy throughout where the sample
 * does not tell).
 * @param {{ utilization?: unknown }} summary an interval summary (window.js summarize())
 * @returns {number}
 */
function busyShare(summary) {
  const u = summary.utilization;
  return typeof u === 'number' && u >= 0 && u <= 1 ? u : 1;
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

/**
 * A findings engine over a window of samples.
 * @param {{ intervalMs: number, startTime?: number, limits?: Partial<typeof LIMITS> }} options
 *   limits: any limit by name (lib/findings/rules/*.js and ENGINE_LIMITS), as tests set them
 * @returns {FindingsEngine}
 */
function createFindingsEngine(options) {
  return new FindingsEngine(options);
}

// Give each finding the severity its impact gives and sort them costliest first (a stable sort:
// equal impact keeps the rules' order).
function rankByImpact(found, lim) {
  const out = found.map(({ id, summary, evidence, advice, impact }) => {
    const severity = impact.score >= lim.criticalScore ? 'critical' : impact.score >= lim.warningScore ? 'warning' : 'info';
    return { id, severity, summary, evidence, advice, impact: roundImpact(impact) };
  });
  return out.sort((a, b) => b.impact.score - a.impact.score);
}

function roundImpact(impact) {
  const out = {};
  for (const [k, v] of Object.entries(impact)) out[k] = typeof v === 'number' && k !== 'requests' ? Math.round(v * 1e4) / 1e4 : v;
  return out;
}

module.exports = { createFindingsEngine, LIMITS };
