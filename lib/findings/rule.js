'use strict';

// What a finding rule declares, in one place: its id, its limits, the lines of documentation
// about it and its evaluation (which gives the impact). lib/findings/index.js lists the rules;
// the engine runs them and scripts/docs.js writes docs/findings.md from their declarations.

/**
 * What a rule's evaluation gives: the claim, the figures that prove it, what to change, and what
 * the cause cost in the window. The engine adds the id and the severity that follows from
 * impact.score.
 * @typedef {object} RuleResult
 * @property {string} summary one paragraph, with the figures
 * @property {object} evidence the figures that prove it
 * @property {string[]} advice what to change, with numbers where there are some
 * @property {{ secondsPerSecond?: number, requests?: number, loopBlockedSeconds?: number, score: number }} impact
 *   score is the seconds lost per second of the window
 */

/**
 * What a rule reads besides the window: the resolver's configuration and the sampled callers
 * of a hostname.
 * @typedef {object} RuleContext
 * @property {object|null|undefined} resolver snapshot details.resolver (resolv.conf as glibc reads it)
 * @property {(name: string) => object[]} callersOf sampled call sites of a hostname, most first
 */

/**
 * @typedef {object} RuleDocs
 * @property {string} means what the finding says, in one line
 * @property {(limits: Readonly<Record<string, number>>) => string} fires what fires it, with the limit values
 * @property {string} impact what its impact measures
 * @property {string} advice what its advice includes
 * @property {string} example one finding as `uvscope report` prints it, or the incident that shows it
 */

/**
 * @typedef {object} Rule
 * @property {string} id kebab-case, the finding's id
 * @property {Readonly<Record<string, number>>} limits the thresholds it owns (overridable by name)
 * @property {Readonly<RuleDocs>} docs
 * @property {(window: any[], limits: Readonly<Record<string, number>>, context: RuleContext, state?: any) => RuleResult|null} evaluate
 *   the finding over the window of interval summaries (oldest first), or null; state is the
 *   rule's own for this engine (state())
 * @property {() => object} [state] a new state for one engine: what the rule carries from one
 *   interval to the next (an engine each, never module variables: several engines may run at once)
 * @property {(summary: any, state: any, sample: { time: number, points: readonly object[], details: any }) => void} [enter]
 *   what the rule does as an interval's summary enters the window, its signals worked out
 *   (lib/findings/signals.js): the rule's own figures of the summary, its state
 * @property {(sample: { time: number, points: readonly object[], details: any }, kept: any, summary: any) => unknown} [interval]
 *   what the rule keeps of each sample beyond the shared summary (lib/findings/window.js): the
 *   window holds it as summary.own[id]. kept is what it returned for an interval that has left
 *   the window (or undefined): an object of its own it may overwrite and return, so that a full
 *   window makes no new objects (never one a sample handed it: those are frozen). summary is the
 *   interval's summary, always given, its signals worked out (lib/findings/signals.js)
 * @property {(summary: any, limits: Readonly<Record<string, number>>, state?: any) => boolean} [quiet]
 *   true when an interval gives the rule nothing to fire on: a window made only of such summaries
 *   cannot make evaluate() return a finding (with these limits). Called once per summary, as it
 *   enters the window (its signals, own figures and the rule's enter() done, its hostnames merged
 *   into its bucket); the engine then skips evaluate() while every summary of the window is quiet.
 *   Conservative: false wherever unsure. Without it the rule is evaluated every sample
 * @property {boolean} [latestOnly] evaluate() reads only the latest summary's own[id]: kept is then
 *   what interval() returned for the interval before, so that the window holds one object for the
 *   rule rather than one per interval (600 at a 100 ms interval)
 */

const DOC_FIELDS = Object.freeze(['means', 'impact', 'advice', 'example']);

/**
 * Check a rule's declaration and freeze it, so a rule missing a part fails at load, in tests.
 * @param {Rule} rule
 * @returns {Readonly<Rule>}
 */
function defineRule(rule) {
  const where = `finding rule ${rule && rule.id}`;
  if (typeof rule.id !== 'string' || !/^[a-z][a-z0-9-]*$/.test(rule.id)) throw new TypeError(`${where}: id must be kebab-case`);
  if (typeof rule.evaluate !== 'function') throw new TypeError(`${where}: evaluate() missing`);
  if (rule.interval !== undefined && typeof rule.interval !== 'function') throw new TypeError(`${where}: interval must be a function`);
  if (rule.quiet !== undefined && typeof rule.quiet !== 'function') throw new TypeError(`${where}: quiet must be a function`);
  for (const [k, v] of Object.entries(rule.limits || {})) {
    if (typeof v !== 'number') throw new TypeError(`${where}: limit ${k} must be a number`);
  }
  /** @type {any} */
  const docs = rule.docs || {};
  for (const k of DOC_FIELDS) if (typeof docs[k] !== 'string' || !docs[k]) throw new TypeError(`${where}: docs.${k} missing`);
  if (typeof docs.fires !== 'function') throw new TypeError(`${where}: docs.fires(limits) missing`);
  return /** @type {Readonly<Rule>} */ (Object.freeze({ ...rule, limits: Object.freeze({ ...(rule.limits || {}) }), docs: Object.freeze({ ...docs }) }));
}

/**
 * state() and enter() for a rule that fires on a cumulative counter's rise (a field of its own
 * figures, summary.own[id]): as an interval enters, its figures' `moved` says whether the counter
 * differs from the reading before (the engine's first reading: not moved; a reading that is not a
 * number: moved, nothing known), for the rule's quiet().
 * @param {string} id the rule's id
 * @param {string} field the counter's field in the rule's own figures
 * @returns {{ state: () => { last: number | null }, enter: (summary: any, state: { last: number | null }) => void }}
 */
function counterMoved(id, field) {
  return {
    state: () => ({ last: null }),
    enter(summary, state) {
      const o = summary.own[id];
      if (!o) return;
      const v = o[field];
      o.moved = !Number.isFinite(v) || (state.last !== null && v !== state.last);
      state.last = v;
    },
  };
}

module.exports = { defineRule, counterMoved };
