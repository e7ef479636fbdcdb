'use strict';

const { findPoint } = require('./snapshot');

/**
 * A snapshot as text for people: the figures, then the findings, costliest first.
 * @param {{ time: number, points: readonly object[], findings?: readonly object[], details?: object }} snapshot
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
  const max = value('nodejs.eventloop.delay.max');
  if (max !== undefined) lines.push(`event loop: delay max ${(max * 1000).toFixed(1)} ms, p99 ${(value('nodejs.eventloop.delay.p99') * 1000).toFixed(1)} ms, utilization ${(value('nodejs.eventloop.utilization') * 100).toFixed(0)} %`);
  const hosts = ((snapshot.details && snapshot.details.dns && snapshot.details.dns.hosts) || [])
    .filter((h) => h.recentLookups > 0)
    .sort((a, b) => b.recentLookups * b.mean - a.recentLookups * a.mean);
  if (hosts.length) lines.push('dns lookups (last interval: mean = waiting for a DNS slot + resolving; recent: p50, p99, standard deviation):');
  for (const h of hosts.slice(0, MAX_HOSTS)) {
    const split = h.lookups > 0
      ? `${ms(h.seconds / h.lookups)} = ${ms(h.queueWaitSeconds / h.lookups)} waiting for a DNS slot + ${ms(h.resolveSeconds / h.lookups)} resolving`
      : 'none this interval';
    lines.push(`  ${h.name}: ${h.lookups} lookups, ${split}; recent ${h.recentLookups}: p50 ${ms(h.p50)}, p99 ${ms(h.p99)}, stddev ${ms(h.stddev)}`);
  }
  if (hosts.length > MAX_HOSTS) lines.push(`  ... and ${hosts.length - MAX_HOSTS} more hostnames`);
  pushFindings(lines, snapshot.findings);
  // The other processes served at the same endpoint (lib/multiprocess.js).
  for (const p of Array.isArray(snapshot.processes) ? snapshot.processes : []) {
    lines.push(`pid ${p.pid}${p.workerId !== undefined ? ` (worker ${p.workerId})` : ''}, ${new Date(p.time).toISOString()}`);
    pushFindings(lines, p.findings);
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

const MAX_HOSTS = 10;

function ms(seconds) {
  if (seconds === null || seconds === undefined) return '-';
  if (seconds >= 10) return `${seconds.toFixed(1)} s`;
  return seconds >= 0.01 ? `${Math.round(seconds * 1000)} ms` : `${(seconds * 1000).toFixed(1)} ms`;
}

// What a finding cost in the window, in words.
function impactText(impact) {
  const parts = [];
  if (impact.secondsPerSecond !== undefined) parts.push(`${ms(impact.secondsPerSecond)} lost per second`);
  if (impact.loopBlockedSeconds !== undefined) parts.push(`event loop blocked ${ms(impact.loopBlockedSeconds)}`);
  if (impact.requests !== undefined) parts.push(`${impact.requests} affected`);
  parts.push(`score ${impact.score}`);
  return parts.join(', ');
}

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
