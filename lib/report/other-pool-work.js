'use strict';

// How the text report and the page word a lookup's time after its DNS slot when other work held
// the pool. libuv's slow-I/O limit gives lookups (size+1)/2 slots, and the DNS split
// (lib/sources/dns/slots.js) replays only those: a lookup that had a slot but found every thread
// taken by fs, crypto or zlib work waited in the queue all the same, and that wait is counted as
// resolving (test/sources/dns-split.test.js: 4 pbkdf2 jobs on a pool of 4, ~150 of ~260 ms).

const { TYPE_NAMES } = require('../findings/job-types');
const THREADPOOL_SATURATED = require('../findings/rules/threadpool-saturated');

// The wait of the work probe that says no thread was free (threadpool-saturated's and the other
// rules' poolHeld), and readable job type names.
const RULES = Object.freeze({ waitS: THREADPOOL_SATURATED.limits.poolWaitS, names: TYPE_NAMES });

/**
 * The words added after "resolving" (or after the CPU wording) when the interval had other work
 * that could hold every thread a lookup with a free DNS slot could use: the work probe waited for
 * a thread (rules.waitS beyond the loop's own delay; DNS alone can hold only its slots, so only
 * where the pool has threads outside them), or more non-DNS jobs were pending at the sample than
 * there are threads outside the DNS slots. The work is named as the tracer saw it (kind and type)
 * where it was armed, else by the pending kinds. '' otherwise.
 *
 * Self-contained (it uses nothing outside itself): the page gets it as source, with the rules.
 * @param {any} tp snapshot.details.threadpool
 * @param {number|undefined} delayMax the interval's event-loop delay max, seconds
 * @param {{ waitS: number, names: Readonly<Record<string, string>> }} rules the work probe's wait
 *   that says the pool is held (threadpool-saturated's poolWaitS) and job type names
 * @returns {string}
 */
function otherPoolWork(tp, delayMax, rules) {
  if (!tp || !(tp.size > 0)) return '';
  const slots = tp.dnsSlots || 0;
  const ms = (s) => `${Math.round(s * 1000)} ms`;
  const evidence = [];
  const w = tp.probes && tp.probes.work;
  const waited = w ? Math.max(w.maxWaitSeconds || 0, w.inFlightSeconds || 0) - (delayMax || 0) : 0;
  if (tp.size > slots && waited >= rules.waitS) evidence.push(`a job ${w.inFlightSeconds > 0 ? 'has waited' : 'waited up to'} ${ms(waited)} for a thread`);
  const pending = tp.pending || {};
  const pendingKinds = [];
  let others = 0;
  for (const kind in pending) {
    if (kind === 'dns' || !(pending[kind] > 0)) continue;
    others += pending[kind];
    pendingKinds.push(`${pending[kind]} ${kind}`);
  }
  if (others > tp.size - slots) evidence.push(`${pendingKinds.join(', ')} pending at the sample`);
  if (evidence.length === 0) return '';
  const named = [];
  for (const j of (tp.tracer && tp.tracer.jobs) || []) {
    if (j.kind === 'dns' || !(j.pending > 0 || j.completed > 0)) continue;
    const type = rules.names[String(j.type).toUpperCase()] || String(j.type);
    const what = type.startsWith(j.kind) ? type : `${j.kind} (${type})`;
    if (!named.includes(what)) named.push(what);
  }
  return `, or waiting for a pool thread held by other work (${named.length ? `${named.slice(0, 3).join(', ')}: ` : ''}${evidence.join('; ')})`;
}

/**
 * otherPoolWork's source for the page (lib/report/page/page.html), with RULES given.
 * @returns {string} a function expression of (tp, delayMax)
 */
function pageSource() {
  return `((tp, delayMax) => (${otherPoolWork.toString()})(tp, delayMax, ${JSON.stringify(RULES)}))`;
}

module.exports = { otherPoolWork, RULES, pageSource };
