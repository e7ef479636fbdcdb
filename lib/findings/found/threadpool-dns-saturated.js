'use strict';

// What threadpool-dns-saturated (lib/findings/rules/threadpool-dns-saturated.js) says once its
// gate passed (lookups queued for a DNS slot): the summary, evidence, advice and impact. Loaded
// then, not with the rule: most processes never queue their lookups.

const { windowSeconds, topHosts } = require('../window');
const { dnsSlots } = require('../../core/libuv');
const { ms } = require('../../core/format');

/**
 * The finding over the window, its gate passed.
 * @param {object[]} window the window of interval summaries
 * @param {object[]} hot the intervals in which lookups queued
 * @returns {import('../rule').RuleResult}
 */
function found(window, hot) {
  const last = window[window.length - 1];
  const peakPending = Math.max(...window.map((s) => s.pendingDns));
  const peakQueued = Math.max(...window.map((s) => s.queuedDns));
  const waits = window.map((s) => s.dnsWaitMean).filter((w) => w !== null);
  const maxWait = waits.length ? Math.max(...waits) : null;
  // (size+1)/2 slots must cover the peak of concurrent lookups.
  const suggested = Math.min(1024, Math.max(last.size + 1, 2 * peakPending - 1));
  return {
    summary: `DNS lookups queue for the threadpool: up to ${peakPending} lookups pending for ${last.slots} DNS slots (UV_THREADPOOL_SIZE=${last.size}), ${peakQueued} waiting${maxWait !== null ? `, probe waited up to ${ms(maxWait)}` : ''}.`,
    evidence: {
      intervals: hot.length,
      windowIntervals: window.length,
      threadpoolSize: last.size,
      dnsSlots: last.slots,
      peakPendingLookups: peakPending,
      peakQueuedLookups: peakQueued,
      maxQueueWaitSeconds: maxWait,
      topHostnames: topHosts(window, (h) => h.lookups).slice(0, 5),
    },
    advice: [
      2 * peakPending - 1 <= 1024
        ? `Raise UV_THREADPOOL_SIZE to ${suggested}: (size+1)/2 = ${dnsSlots(suggested)} DNS slots would have covered the peak of ${peakPending} concurrent lookups. Set it in the environment or at the very top of the app, before anything uses the pool.`
        : `Even the largest pool, UV_THREADPOOL_SIZE=1024 (512 DNS slots), cannot cover a peak of ${peakPending} concurrent lookups: the lookups themselves have to go (cache them, or use IP addresses).`,
      'Cache and coalesce lookups (one lookup per hostname and TTL, concurrent callers share it).',
      'Reuse connections (keep-alive) so each request does not start with a lookup.',
    ],
    impact: impactOf(window),
  };
}

// The lookups' wait for a DNS slot over the window, and the lookups that waited.
function impactOf(window) {
  let waited = 0;
  let requests = 0;
  for (const s of window) {
    for (let i = 0; i < s.hosts.length; i++) {
      const h = s.hosts[i];
      waited += h.queueWaitSeconds || 0;
      requests += h.queuedLookups || 0;
    }
  }
  const seconds = windowSeconds(window);
  return { secondsPerSecond: waited / seconds, requests, score: waited / seconds };
}

module.exports = { found };
