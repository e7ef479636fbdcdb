'use strict';

// What listen-queue-overflow (lib/findings/rules/listen-queue-overflow.js) says once its gate
// passed (the namespace's ListenOverflows rose in the window): the port, the cause the intervals
// with drops support, the advice for it and the impact. Loaded then, not with the rule.

const { windowSeconds } = require('../window');
const { ms, round } = require('../../core/format');
const { topBlocker } = require('./blockers');

const ID = 'listen-queue-overflow';
// TCP's initial retransmission timeout (RFC 6298, Linux TCP_TIMEOUT_INIT): a client whose SYN or
// final ACK was dropped waits this long before it tries again, then twice that, and so on.
const FIRST_RETRANSMIT_S = 1;
// A block's echo: the clients it dropped retry 1, 3 and 7 s after their first attempt, all at
// once, and a queue the loop drains at its own pace overflows again. Drops up to this long after
// an interval of drops while blocked are its retransmits, not a burst of new connections.
const ECHO_S = FIRST_RETRANSMIT_S * (1 + 2 + 4);

/**
 * What blocked the loop where the drops count with a block (drops in a blocked interval or the
 * one after it), as the capture of blocks (lib/sources/blockers/) put it on those intervals'
 * summaries (summary.blocks): the costliest blocker, as eventloop-blocked names it
 * (lib/findings/found/blockers.js); null where nothing was captured.
 * @param {readonly any[]} window the window of interval summaries
 * @returns {{ name: string, caller?: string, share: number } | null}
 */
function whatBlocked(window) {
  if (!window.some((s) => s.blocks)) return null;
  const blocked = new Set();
  let prev = null;
  let prevSummary = null;
  for (const s of window) {
    const o = s.own && s.own[ID];
    if (!o) continue;
    if (prev !== null && o.overflows > prev.overflows) {
      if (o.blockedSeconds > 0) blocked.add(s);
      if (prev.blockedSeconds > 0) blocked.add(prevSummary);
    }
    prev = o;
    prevSummary = s;
  }
  return blocked.size ? topBlocker(window, (s) => blocked.has(s)) : null;
}

/**
 * The finding over the window, its gate passed.
 * @param {object[]} window the window of interval summaries
 * @param {Readonly<Record<string, number>>} lim the limits
 * @returns {import('../rule').RuleResult}
 */
function found(window, lim) {
  let prev = null;
  const causes = { blocked: 0, cpu: 0, burst: 0 };
  let intervals = 0;
  let worst = 0; // the most drops in one interval
  let maxBlocked = 0;
  let minCpuShare = null;
  let peak = null; // the fullest listener seen at a sample
  let netns = null;
  let sinceBlockDrops = Infinity; // seconds since the end of the last interval with drops while blocked
  let blockDrops = 0; // the drops while blocked so far: each is at most one client retrying at a time
  for (const s of window) {
    const o = s.own && s.own[ID];
    if (!o) continue;
    netns = o.netns;
    if (o.limit && (peak === null || o.queue / o.limit > peak.queue / peak.limit)) peak = { address: o.address, port: o.port, queue: o.queue, limit: o.limit };
    if (prev !== null) {
      sinceBlockDrops += o.seconds || 0;
      let drops = o.overflows - prev.overflows;
      if (drops > 0) {
        intervals++;
        worst = Math.max(worst, drops);
        // The cause this interval supports: a blocked loop first (nothing called accept()), then a
        // main thread waiting for a CPU, else connections arriving faster than a free loop accepts.
        // The interval right after a block counts with it: the retransmits of what the block
        // dropped meet the queue it filled while the loop drains it.
        if (o.blockedSeconds > 0 || prev.blockedSeconds > 0) {
          causes.blocked += drops;
          blockDrops += drops;
          sinceBlockDrops = 0;
          maxBlocked = Math.max(maxBlocked, o.blockedSeconds, prev.blockedSeconds);
          drops = 0;
        } else if (sinceBlockDrops <= ECHO_S) {
          // the block's echo: no more of them than the clients the block dropped
          const echo = Math.min(drops, blockDrops);
          causes.blocked += echo;
          drops -= echo;
        }
        if (drops > 0 && o.cpuShare !== null && o.cpuShare < lim.listenCpuShare) {
          causes.cpu += drops;
          minCpuShare = minCpuShare === null ? o.cpuShare : Math.min(minCpuShare, o.cpuShare);
        } else if (drops > 0) causes.burst += drops;
      }
    }
    prev = o;
  }
  const blockedBy = whatBlocked(window);
  const total = causes.blocked + causes.cpu + causes.burst;
  const cause = causes.blocked >= causes.cpu && causes.blocked >= causes.burst ? 'blocked' : causes.cpu >= causes.burst ? 'cpu' : 'burst';
  const seconds = windowSeconds(window);
  const where = peak && peak.port ? `${peak.address.includes(':') ? `[${peak.address}]` : peak.address}:${peak.port}` : 'the app\'s port';
  const seenFull = peak !== null && peak.queue >= peak.limit;
  const queueText = peak ? `${peak.queue} waiting against its limit of ${peak.limit}` : 'its queue not read';
  let why;
  if (cause === 'blocked') why = `${share(causes.blocked, total)} came while the event loop was blocked or in the ${ECHO_S} s after, as the clients it dropped retried (blocked up to ${ms(maxBlocked)}${blockedBy ? `, by ${blockedBy.name}` : ''}): nothing called accept().`;
  else if (cause === 'cpu') why = `${share(causes.cpu, total)} came while the main thread waited for a CPU (it ran ${Math.round((minCpuShare || 0) * 100)} % of its runnable time at worst): a CPU quota or an overloaded host, not the app, kept it from accepting.`;
  else why = `${share(causes.burst, total)} came with the loop free: bursts of connections larger than the backlog (up to ${worst} dropped in one interval).`;
  const caveat = seenFull ? '' : ` The queue of this process's port${peak ? ` was not seen full at a sample (${peak.queue} at most of ${peak.limit})` : 's was not read'}: the counter is the network namespace's (${netns || 'unknown'}), so other processes in it may own some of the drops, or the bursts fall between samples.`;
  // A backlog that holds the worst interval's connections (the drops count retransmits too: at most).
  const backlog = peak ? Math.min(65535, 2 ** Math.ceil(Math.log2(peak.limit + worst))) : null;
  const advice = [];
  if (cause === 'blocked') advice.push(`Unblock the event loop${blockedBy ? ` (${blockedBy.name}${blockedBy.caller ? ` at ${blockedBy.caller}` : ''})` : ''}: while it is blocked nothing accepts, and past the backlog every connection attempt waits a second or more. Move CPU work to worker_threads and synchronous I/O off request paths (see eventloop-blocked).`);
  if (cause === 'cpu') advice.push('Give the process the CPU it waits for (a CPU limit that covers its demand, fewer processes per core): the loop accepts only while it runs (see cpu-throttled, cpu-starved).');
  if (backlog) advice.push(`Raise the backlog so a burst fits: server.listen({ port, backlog: ${backlog} }) with net.core.somaxconn at least ${backlog} (sysctl; in Kubernetes a namespaced sysctl of the pod); the listen() backlog is capped by somaxconn. The limit now is ${peak.limit}.`);
  advice.push('Spread the connections over more processes or instances (node:cluster, more replicas behind the load balancer).');
  advice.push('Reuse connections on the clients\' side (keep-alive agents, a pool): fewer handshakes arrive at once.');
  return {
    summary: `The kernel dropped ${total.toLocaleString('en-US')} connection attempts to ${where} in the last ${Math.round(seconds)} s because its accept queue was full (${queueText}): each client waited ${FIRST_RETRANSMIT_S} s or more for a retransmit, and the app never saw them. ${why}${caveat}`,
    evidence: {
      overflows: total,
      intervals,
      worstInterval: worst,
      byCause: { ...causes },
      cause,
      port: peak ? { address: peak.address, port: peak.port, peakQueue: peak.queue, limit: peak.limit, seenFull } : null,
      maxBlockedSeconds: cause === 'blocked' ? round(maxBlocked, 3) : null,
      blockedBy,
      minCpuShare: minCpuShare === null ? null : round(minCpuShare, 3),
      synDrops: lastOwn(window).synDrops - firstOwn(window).synDrops,
      netns,
    },
    advice,
    impact: { requests: total, secondsPerSecond: (total * FIRST_RETRANSMIT_S) / seconds, score: (total * FIRST_RETRANSMIT_S) / seconds },
  };
}

function share(n, total) {
  return n === total ? 'All' : `${n.toLocaleString('en-US')} of them`;
}

function firstOwn(window) {
  for (const s of window) if (s.own && s.own[ID]) return s.own[ID];
  return null;
}

function lastOwn(window) {
  for (let i = window.length - 1; i >= 0; i--) if (window[i].own && window[i].own[ID]) return window[i].own[ID];
  return null;
}

module.exports = { found, whatBlocked };
