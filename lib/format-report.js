'use strict';

const { findPoint } = require('./snapshot');

/**
 * A snapshot as text for people: the findings first, then the figures they rest on.
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
  pushFindings(lines, snapshot.findings);
  // The other processes served at the same endpoint (lib/multiprocess.js).
  for (const p of Array.isArray(snapshot.processes) ? snapshot.processes : []) {
    lines.push(`pid ${p.pid}${p.workerId !== undefined ? ` (worker ${p.workerId})` : ''}, ${new Date(p.time).toISOString()}`);
    pushFindings(lines, p.findings);
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

function pushFindings(lines, findings = []) {
  lines.push('');
  if (findings.length === 0) lines.push('No findings.', '');
  for (const f of findings) {
    lines.push(`[${f.severity}] ${f.id}: ${f.summary}`);
    for (const a of f.advice || []) lines.push(`  - ${a}`);
    lines.push(`  evidence: ${JSON.stringify(f.evidence)}`);
    lines.push('');
  }
}

module.exports = { formatReport };
