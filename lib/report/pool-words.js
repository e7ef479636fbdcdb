'use strict';

// How the text report and the page word a lookup's time after its DNS slot, from the interval's
// signals (snapshot.signals, lib/findings/signals.js): the same sentence in both, made here. The
// time is the resolver's only while the lookup's thread ran: while pool threads wait for a CPU
// (the signal poolThreadsStarved) it is worded "on a pool thread"; and while other work holds
// the pool it may be a wait for a thread. libuv's slow-I/O limit gives lookups (size+1)/2 slots,
// and the DNS split (lib/sources/dns/slots.js) replays only those: a lookup that had a slot but
// found every thread taken by fs, crypto or zlib work waited in the queue all the same, and that
// wait is counted as resolving (test/sources/dns-split.test.js: 4 pbkdf2 jobs on a pool of 4,
// ~150 of ~260 ms).

const { TYPE_NAMES } = require('../findings/job-types');

/**
 * The words for a lookup's time on its thread while pool threads waited for a CPU (the signal
 * poolThreadsStarved, with the share of their time they waited where known), else null
 * ("resolving"). Self-contained: the page gets it as source.
 * @param {{ poolThreadsStarved?: boolean, poolCpuWaitShare?: number|null }|null|undefined} signals snapshot.signals
 * @returns {string|null}
 */
function poolThreadWords(signals) {
  if (!signals || !signals.poolThreadsStarved || typeof signals.poolCpuWaitShare !== 'number') return null;
  return `on a pool thread, of which pool threads spent ${Math.round(signals.poolCpuWaitShare * 100)} % waiting for a CPU`;
}

/**
 * The words added after "resolving" (or after the CPU wording) when the interval had other work
 * that could hold every thread a lookup with a free DNS slot could use: the pool was held (the
 * signal poolHeld; DNS alone can hold only its slots, so only where the pool has threads outside
 * them), or more non-DNS jobs were pending at the sample than there are threads outside the DNS
 * slots. The work is named as the tracer saw it (kind and type) where it was armed, else by the
 * pending kinds. '' otherwise.
 *
 * Self-contained (it uses nothing outside itself): the page gets it as source, with the names.
 * @param {any} tp snapshot.details.threadpool
 * @param {{ poolHeld?: boolean, poolWaitSeconds?: number|null }|null|undefined} signals snapshot.signals
 * @param {Readonly<Record<string, string>>} names readable job type names (findings/job-types.js)
 * @returns {string}
 */
function otherPoolWork(tp, signals, names) {
  if (!tp || !(tp.size > 0)) return '';
  const slots = tp.dnsSlots || 0;
  const ms = (s) => `${Math.round(s * 1000)} ms`;
  const evidence = [];
  const w = tp.probes && tp.probes.work;
  if (tp.size > slots && signals && signals.poolHeld && typeof signals.poolWaitSeconds === 'number') {
    evidence.push(`a job ${w && w.inFlightSeconds > 0 ? 'has waited' : 'waited up to'} ${ms(signals.poolWaitSeconds)} for a thread`);
  }
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
    const type = names[String(j.type).toUpperCase()] || String(j.type);
    // Addon work whose resource name said nothing is named by the package that submitted it.
    const what = j.package ? `${j.package} (addon work)` : type.startsWith(j.kind) ? type : `${j.kind} (${type})`;
    if (!named.includes(what)) named.push(what);
  }
  return `, or waiting for a pool thread held by other work (${named.length ? `${named.slice(0, 3).join(', ')}: ` : ''}${evidence.join('; ')})`;
}

/**
 * The words' source for the page (lib/report/page/page.html): an object of both functions, the
 * names given.
 * @returns {string} an expression of { otherPoolWork(tp, signals), poolThreadWords(signals) }
 */
function pageSource() {
  return `({ otherPoolWork: (tp, signals) => (${otherPoolWork.toString()})(tp, signals, ${JSON.stringify(TYPE_NAMES)}), poolThreadWords: ${poolThreadWords.toString()} })`;
}

module.exports = { poolThreadWords, otherPoolWork, TYPE_NAMES, pageSource };
