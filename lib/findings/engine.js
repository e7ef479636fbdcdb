'use strict';

const RULES = require('./index');
const { summarizeInterval, windowColumns } = require('./window');
const { mergeHosts, isActive, HostPool, HOST_BUCKETS } = require('./hosts');
const { deriveSignals, snapshotSignals } = require('./signals');

// The engine's own limits; each rule declares its own (lib/findings/rules/*.js), the signals'
// (lib/findings/signals.js) with the rule about them: test/findings/signals.test.js checks each is there.
const ENGINE_LIMITS = Object.freeze({
  windowMs: 60000,
  // Severity from impact.score (seconds lost per second of the window): at least this much is
  // critical, at least warningScore a warning, less is info.
  criticalScore: 0.5,
  warningScore: 0.02,
});

// The rules that keep figures of their own per interval, and those with work of their own as an
// interval enters the window.
const KEEPING = RULES.filter((r) => r.interval);
const ENTERING = RULES.map((r, i) => i).filter((i) => RULES[i].enter);
// The rules that say when an interval gives them nothing to fire on (rule.quiet()), a bit each.
const QUIETING = RULES.map((r, i) => i).filter((i) => RULES[i].quiet);
if (QUIETING.length > 30) throw new Error('findings engine: more than 30 rules with quiet()');

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
 * sample, with each interval's signals (lib/findings/signals.js); signals() gives the latest
 * interval's for the snapshot. impact is what the cause cost in the window: { secondsPerSecond?,
 * requests?, loopBlockedSeconds?, score }, where score is seconds lost per second of the window;
 * severity follows from the score and findings come sorted by it, costliest first. The engine
 * only schedules, windows and ranks: each rule holds its own logic and state (rule.js).
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
  #context;
  #spareHosts = new HostPool();
  // Each rule's state for this engine (rule.state()), by the rule's index in RULES.
  #states;
  // The summaries' numbers, a row per summary of the full window (lib/core/columns.js).
  #cells;
  // Per rule (by its index in RULES), how many summaries of the window are not quiet for it (each
  // summary's `loud`: the QUIETING rules it is not quiet for, a bit each). A rule whose count is 0
  // finds nothing and is not evaluated.
  #loudCount = new Int32Array(RULES.length);
  #checkQuiet;

  /** @param {{ intervalMs: number, startTime?: number, limits?: Partial<typeof LIMITS>, checkQuiet?: boolean }} options */
  constructor({ intervalMs, startTime = Date.now(), limits = {}, checkQuiet = false }) {
    this.#lim = { ...LIMITS, ...limits };
    this.#checkQuiet = checkQuiet;
    this.#size = Math.max(1, Math.ceil(this.#lim.windowMs / intervalMs));
    this.#cells = windowColumns(this.#size);
    this.#previousTime = startTime;
    this.#states = RULES.map((r) => (r.state ? r.state() : undefined));
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
    const states = this.#states;
    // A full window's oldest summary leaves it and is overwritten with this interval's figures
    // (its parts too: the rules' own figures, the pool's, the hostnames'): what the window keeps
    // lives for its 60 s, and new objects for it every interval would all survive scavenges.
    const leaving = window.length >= this.#size ? window.shift() : null;
    if (leaving) this.#count(leaving.loud, -1);
    const summary = summarizeInterval(sample, this.#previous, this.#previousTime, leaving, this.#spareHosts, this.#cells);
    deriveSignals(summary, lim);
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
    for (let i = 0; i < ENTERING.length; i++) RULES[ENTERING[i]].enter(summary, states[ENTERING[i]], sample);
    // Only what the next summary reads of this one (the probes' cumulative waits): keeping the
    // whole sample would keep every hostname's figures alive for one more interval.
    this.#previous = { time: sample.time, points: sample.points.filter((p) => p.name === 'nodejs.uv.threadpool.queue_wait') };
    this.#previousTime = sample.time;
    window.push(summary);
    mergeHosts(window, lim.windowMs / HOST_BUCKETS, this.#spareHosts);
    this.#keepCallers(sample);
    this.#context.resolver = sample.details.resolver;
    // Judged once its hostnames are merged: the latest summary of a bucket carries the bucket's.
    summary.loud = loudBits(summary, lim, states);
    this.#count(summary.loud, 1);
    const found = [];
    const counts = this.#loudCount;
    for (let i = 0; i < RULES.length; i++) {
      const rule = RULES[i];
      if (rule.quiet && counts[i] === 0) {
        if (this.#checkQuiet) checkQuiet(rule, window, lim, this.#context, states[i]);
        continue;
      }
      const result = rule.evaluate(window, lim, this.#context, states[i]);
      if (result) found.push({ id: rule.id, ...result });
    }
    return rankByImpact(found, lim);
  }

  // Add (by 1 or -1) a summary's not-quiet bits to the rules' counts.
  #count(bits, by) {
    if (bits === 0) return;
    for (let b = 0; b < QUIETING.length; b++) if (bits & (1 << b)) this.#loudCount[QUIETING[b]] += by;
  }

  /**
   * The latest interval's signals, as the snapshot carries them (null before the first sample).
   * @returns {import('../snapshot/snapshot').Signals|null}
   */
  signals() {
    const window = this.#window;
    return window.length ? snapshotSignals(window[window.length - 1]) : null;
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

// The QUIETING rules (a bit each, in their order) that an interval's summary is not quiet for.
function loudBits(summary, lim, states) {
  let bits = 0;
  for (let b = 0; b < QUIETING.length; b++) {
    const i = QUIETING[b];
    if (!RULES[i].quiet(summary, lim, states[i])) bits |= 1 << b;
  }
  return bits;
}

// The ground truth of quiet() (checkQuiet, in tests): a rule skipped for a quiet window is
// evaluated anyway, and must find nothing.
function checkQuiet(rule, window, lim, context, state) {
  if (rule.evaluate(window, lim, context, state)) throw new Error(`finding rule ${rule.id}: quiet() held for every summary of the window, yet evaluate() fired`);
}

/**
 * A findings engine over a window of samples.
 * @param {{ intervalMs: number, startTime?: number, limits?: Partial<typeof LIMITS>, checkQuiet?: boolean }} options
 *   limits: any limit by name (lib/findings/rules/*.js and ENGINE_LIMITS), as tests set them;
 *   checkQuiet (tests): evaluate the rules skipped for a quiet window anyway, and throw if one fires
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
