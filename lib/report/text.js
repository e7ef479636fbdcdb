'use strict';

const { findPoint } = require('../snapshot/snapshot');
const { typeName } = require('../findings/job-types');
const { otherPoolWork, poolThreadWords, TYPE_NAMES } = require('./pool-words');
const { ms, round } = require('../core/format');

/**
 * A snapshot as text for people: the figures, then the findings, costliest first.
 * @param {{ time: number, points: readonly object[], findings?: readonly object[], details?: any, signals?: any, pid?: number, processes?: readonly any[] }} snapshot
 * @returns {string}
 */
function formatReport(snapshot) {
  if (!snapshot) return 'uvscope: no sample yet (the first comes one sampling interval after start).\n';
  const lines = [];
  const value = (name, attrs = {}) => {
    const p = findPoint(snapshot.points, name, attrs);
    return p ? p.value : undefined;
  };
  lines.push(`uvscope report, pid ${snapshot.pid || process.pid}, ${new Date(snapshot.time).toISOString()}`);
  lines.push(
    `threadpool: size ${value('nodejs.uv.threadpool.size')}, DNS slots ${value('nodejs.uv.threadpool.dns_slots')}, ` +
    `pending dns ${value('nodejs.uv.threadpool.pending', { 'nodejs.uv.threadpool.kind': 'dns' })} ` +
    `(queued ${value('nodejs.uv.threadpool.queued', { 'nodejs.uv.threadpool.kind': 'dns' })}), ` +
    `pending fs ${value('nodejs.uv.threadpool.pending', { 'nodejs.uv.threadpool.kind': 'fs' })}`,
  );
  for (const line of threadpoolLines(snapshot.details && snapshot.details.threadpool, snapshot.time)) lines.push(`  ${line}`);
  const max = value('nodejs.eventloop.delay.max');
  if (max !== undefined) lines.push(`event loop: delay max ${(max * 1000).toFixed(1)} ms, p99 ${(value('nodejs.eventloop.delay.p99') * 1000).toFixed(1)} ms, utilization ${(value('nodejs.eventloop.utilization') * 100).toFixed(0)} %`);
  const hosts = ((snapshot.details && snapshot.details.dns && snapshot.details.dns.hosts) || [])
    .filter((h) => h.recentLookups > 0)
    .sort((a, b) => b.recentLookups * b.mean - a.recentLookups * a.mean);
  const onThread = poolThreadText(snapshot);
  // Other work that held the pool: lookups with a DNS slot waited for a thread behind it.
  const heldBy = otherPoolWork(snapshot.details && snapshot.details.threadpool, snapshot.signals, TYPE_NAMES);
  if (hosts.length) lines.push(`dns lookups (last interval: mean = waiting for a DNS slot + ${onThread ? 'on a pool thread' : 'resolving'}${heldBy ? ' or waiting for a thread held by other work' : ''}; recent: p50, p99, standard deviation):`);
  for (const h of hosts.slice(0, MAX_HOSTS)) {
    // The sums are over the lookups that ended in the interval (one may start in one and end in
    // the next); a snapshot of an agent before endedLookups divides by the lookups started.
    const ended = h.endedLookups !== undefined ? h.endedLookups : h.lookups;
    const split = ended > 0
      ? `${ended !== h.lookups ? `${ended} ended, ` : ''}${msDns(h.seconds / ended)} = ${msDns(h.queueWaitSeconds / ended)} waiting for a DNS slot + ${msDns(h.resolveSeconds / ended)} ${onThread || 'resolving'}${heldBy}`
      : h.lookups > 0 ? 'none ended this interval' : 'none this interval';
    lines.push(`  ${h.name}: ${h.lookups} lookups, ${split}; recent ${h.recentLookups}: p50 ${msDns(h.p50)}, p99 ${msDns(h.p99)}, stddev ${msDns(h.stddev)}`);
  }
  if (hosts.length > MAX_HOSTS) lines.push(`  ... and ${hosts.length - MAX_HOSTS} more hostnames`);
  pushFindings(lines, snapshot.findings);
  // The other processes served at the same endpoint (lib/endpoint/multiprocess/).
  for (const p of Array.isArray(snapshot.processes) ? snapshot.processes : []) {
    lines.push(`pid ${p.pid}${p.workerId !== undefined ? ` (worker ${p.workerId})` : ''}, ${new Date(p.time).toISOString()}`);
    pushFindings(lines, p.findings);
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

const MAX_HOSTS = 10;

/**
 * A lookup's time after its DNS slot is its time on a pool thread, which is the resolver's only
 * while that thread has a CPU: how it is worded while pool threads waited for one (the signal
 * poolThreadsStarved, pool-words.js), or where the kernel does not tell how long they waited but
 * cpu-starved fired; else null ("resolving").
 * @param {{ signals?: any, findings?: readonly any[] }} snapshot
 * @returns {string|null}
 */
function poolThreadText(snapshot) {
  const words = poolThreadWords(snapshot.signals);
  if (words) return words;
  const known = snapshot.signals && typeof snapshot.signals.poolCpuWaitShare === 'number';
  const starved = (snapshot.findings || []).some((f) => f.id === 'cpu-starved');
  if (!known && starved) return 'on a pool thread (not all resolving: the process is short of CPU, see cpu-starved; how long pool threads waited for one is not known here)';
  return null;
}

function msDns(seconds) {
  if (seconds === null || seconds === undefined) return '-';
  if (seconds >= 10) return `${seconds.toFixed(1)} s`;
  return seconds >= 0.01 ? `${Math.round(seconds * 1000)} ms` : `${(seconds * 1000).toFixed(1)} ms`;
}

// What a finding cost in the window, in words.
function impactText(impact) {
  const parts = [];
  if (impact.secondsPerSecond !== undefined) parts.push(`${msDns(impact.secondsPerSecond)} lost per second`);
  if (impact.loopBlockedSeconds !== undefined) parts.push(`event loop blocked ${msDns(impact.loopBlockedSeconds)}`);
  if (impact.requests !== undefined) parts.push(`${impact.requests} affected`);
  parts.push(`score ${impact.score}`);
  return parts.join(', ');
}

/**
 * What the threadpool sampler saw in the last interval: the work Node does not list (while the
 * tracer was armed), the probes, busy threads and the tracer's state (when it was armed).
 * @param {object|undefined} tp snapshot.details.threadpool
 * @param {number} time the snapshot's time
 * @returns {string[]}
 */
function threadpoolLines(tp, time) {
  if (!tp) return [];
  const out = [];
  const p = tp.pending || {};
  const unlisted = ['crypto', 'zlib', 'other'].filter((k) => typeof p[k] === 'number');
  if (unlisted.length) out.push(`pending, as the tracer counts them: ${unlisted.map((k) => `${k} ${p[k]}`).join(', ')}`);
  const probes = tp.probes || {};
  const probe = (q, what) => {
    const f = probes[q];
    if (!f) return null;
    const waited = Math.max(f.maxWaitSeconds || 0, f.inFlightSeconds || 0);
    return `${what} ${ms(waited)}${f.inFlightSeconds > 0 ? ' (still waiting)' : ''}`;
  };
  const waits = [probe('work', 'a job waited up to'), probe('dns', 'a lookup up to')].filter(Boolean);
  if (waits.length) out.push(`probes: ${waits.join(', ')} for a thread`);
  if (tp.busy) {
    out.push(tp.busy.available
      ? `busy pool threads: ${round(tp.busy.computing)} of ${tp.busy.threads} computing on CPU${typeof tp.busy.runnable === 'number' ? `, ${round(tp.busy.runnable)} waiting for a CPU${tp.busy.schedulings > 0 ? ` (${round(tp.busy.meanWaitSeconds * 1e6)} µs per wait)` : ''}` : ''} (from /proc)`
      : `busy pool threads: not known (${tp.busy.reason})`);
  }
  const t = tp.tracer;
  if (!t) return out;
  const total = typeof t.armedSeconds === 'number' ? `, ${t.armings || 0} arming(s), ${round(t.armedSeconds)} s armed in all (${round((t.armedShare || 0) * 100)} % of uptime)` : '';
  if (t.armed) out.push(`tracer (${t.mode}): armed since ${new Date(t.armedSince).toISOString()} (${round(Math.max(0, time - t.armedSince) / 1000)} s)${total}`);
  else out.push(`tracer (${t.mode}): not armed${t.mode === 'off' ? ' (UVSCOPE_TRACER=off)' : ''}${total}`);
  const jobs = (t.jobs || []).filter((j) => j.pending > 0 || j.completed > 0);
  if (jobs.length) out.push('the tracer saw, in the last interval (submission to callback):');
  for (const j of jobs.slice(0, 8)) {
    const mean = j.completed > 0 ? `, mean ${ms(j.seconds / j.completed)}, max ${ms(j.maxSeconds)}` : '';
    const callers = (j.callers || []).slice(0, 3).map((c) => `${c.caller} (${c.count})`).join(', ');
    const routes = (j.routes || []).slice(0, 3).map((r) => `${r.method} ${r.route} (${r.count})`).join(', ');
    out.push(`  ${j.kind} ${typeName(j.type)} [${j.type}]: ${j.pending} pending, ${j.completed} done${mean}${callers ? `; from ${callers}` : ''}${routes ? `; serving ${routes}` : ''}`);
  }
  return out;
}

/**
 * @param {string[]} lines
 * @param {readonly any[]} [list]
 */
function pushFindings(lines, list = []) {
  // costliest first (the agent sorts them too; a pushed snapshot may come from an older agent)
  const findings = [...list].sort((a, b) => ((b.impact && b.impact.score) || 0) - ((a.impact && a.impact.score) || 0));
  lines.push('');
  if (findings.length === 0) lines.push('No findings.', '');
  for (const f of findings) {
    lines.push(`[${f.severity}] ${f.id}: ${f.summary}`);
    if (f.impact) lines.push(`  impact: ${impactText(f.impact)}`);
    for (const a of f.advice || []) lines.push(`  - ${a}`);
    lines.push(`  evidence: ${JSON.stringify(f.evidence)}`);
    lines.push('');
  }
}

module.exports = { formatReport };
