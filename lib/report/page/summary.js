'use strict';

/**
 * A compact summary of one snapshot for the page's charts over the last minutes: pending and
 * queued work by kind, the probes' cumulative waits, event-loop delay and utilization. The agent
 * keeps these for /history.json, and the page computes the same from each live snapshot: this
 * function is injected into the page as source, so it must use nothing outside itself.
 * @param {{ time: number, pid?: number, points: readonly object[] }} s a snapshot
 */
function summarize(s) {
  const pending = {};
  const queued = {};
  const probe = { dns: null, work: null };
  const inFlight = {};
  const loop = {};
  const points = s.points || [];
  // An index loop: run every sample over every point, and for...of makes an object per point where
  // V8 has not optimized this yet.
  for (let i = 0; i < points.length; i++) {
    const p = points[i];
    const a = p.attributes || {};
    if (p.name === 'nodejs.uv.threadpool.pending') pending[a['nodejs.uv.threadpool.kind']] = p.value;
    else if (p.name === 'nodejs.uv.threadpool.queued') queued[a['nodejs.uv.threadpool.kind']] = p.value;
    else if (p.name === 'nodejs.uv.threadpool.queue_wait' && p.histogram) probe[a['nodejs.uv.threadpool.queue']] = { sum: p.histogram.sum, count: p.histogram.count, inFlight: 0 };
    else if (p.name === 'uvscope.probe.in_flight') inFlight[a['nodejs.uv.threadpool.queue']] = p.value;
    else if (p.name === 'nodejs.eventloop.delay.max') loop.max = p.value;
    else if (p.name === 'nodejs.eventloop.delay.p99') loop.p99 = p.value;
    else if (p.name === 'nodejs.eventloop.utilization') loop.elu = p.value;
  }
  for (const q of Object.keys(probe)) if (probe[q]) probe[q].inFlight = inFlight[q] || 0;
  return { time: s.time, pid: s.pid, pending, queued, probe, loopMax: loop.max, loopP99: loop.p99, elu: loop.elu };
}

module.exports = { summarize };
