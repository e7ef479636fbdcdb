'use strict';

const { defineRule } = require('../rule');
const { windowSeconds } = require('../window');
const { signalLimits } = require('../signals');
const { ms, round } = require('../../core/format');

/**
 * eventloop-blocked: the loop ran late in enough intervals, by more than the time the main thread
 * waited for a CPU (an overloaded host or a CPU quota is not the app blocking its loop).
 */
module.exports = defineRule({
  id: 'eventloop-blocked',
  limits: {
    ...signalLimits('eventLoopBlockedS', 'eventLoopP99S'), // the signal loopBlocked reads them (lib/findings/signals.js)
    eventLoopBlockedIntervals: 2, // ...in at least this many intervals: one stall is an odd sample
  },
  docs: {
    means: 'the event loop was blocked: every request, timer and callback waited; what blocked it, where the capture runs (Linux)',
    fires: (l) => `in ${l.eventLoopBlockedIntervals}+ intervals (one stall is an odd sample), a delay of ${ms(l.eventLoopBlockedS)}+ or an interval p99 of ${ms(l.eventLoopP99S)}+, less all the time the main thread waited for a CPU in that interval (Linux \`/proc/thread-self/schedstat\`, read once per sample: a lower bound; an overloaded host or a CPU quota is not the app blocking its loop, while CPU work and blocking calls such as sync I/O are). What blocked it: the blocks the capture (\`UVSCOPE_BLOCKERS\`, Linux) timed in those intervals, each blocker with its share of their summed durations (its share of a block's stack samples, each weighted by the time it covers, times the block's duration), V8's garbage collector's share (its full collections' gc entries inside the blocks; scavenges stay with the code that allocated), and the share of blocks no stack sample saw into`,
    impact: '`loopBlockedSeconds`: the longest block of each blocked interval, summed (a lower bound); `score`: that per second of the window',
    advice: 'where blockers were named, what fits each: a synchronous API of Node\'s (`fs`, `zlib`, `crypto`, `child_process` `*Sync`) with its asynchronous form, a package\'s entry with its asynchronous or streaming interface or worker_threads, the app\'s own code split into chunks that yield (`setImmediate`) or moved to worker_threads, for GC the heap against its limit, for one long native call where to look; else: move CPU work off the loop, synchronous I/O off request paths. The evidence (`blockers`) carries the frames: what ran, what the app called, the app\'s frame, the route',
    example: 'the lab\'s `zooz` incident (handlers burning 25 ms of CPU each, the capture on at 20 ms): "The event loop was blocked for up to 227 ms in 5 of the last 7 intervals: every request, timer and callback waited that long. Of the 18 blocks of 20 ms or more timed in them (1.39 s in all, up to 230 ms): 91 % in `burnCpu` at examples/incidents/apps/service.js:20 while serving GET /."',
  },
  // Nothing to fire on: the loop did not run late, or ran late only while waiting for a CPU.
  quiet: (s, lim) => !(s.loopRanLate && s.loopWasBlocked) && lim.eventLoopBlockedIntervals > 0,
  evaluate(window, lim) {
    // The gate, every sample: count the blocked intervals (the signals loopRanLate and
    // loopWasBlocked: late, and still blocked once the main thread's wait for a CPU is taken out)
    // in a loop that allocates nothing.
    let blockedIntervals = 0;
    for (let i = 0; i < window.length; i++) if (window[i].loopRanLate && window[i].loopWasBlocked) blockedIntervals++;
    if (blockedIntervals < lim.eventLoopBlockedIntervals) return null;
    const late = window.filter((s) => s.loopRanLate);
    const hot = late.filter((s) => s.loopWasBlocked);
    if (hot.length < lim.eventLoopBlockedIntervals) return null;
    const max = Math.max(...hot.map((s) => Math.max(s.delayMax || 0, s.loopBlockedOnCpu || 0)));
    const shares = hot.filter((s) => typeof s.loopCpuShare === 'number').map((s) => s.loopCpuShare);
    // One block per interval at least as long as its largest delay: a lower bound.
    const blocked = window.reduce((a, s) => a + s.loopBlocked, 0);
    // What blocked it, where the capture of blocks (lib/sources/blockers/) ran: named in the
    // summary, its frames in the evidence, advice that fits it (lib/findings/found/blockers.js).
    const said = window.some((s) => s.blocks) ? require('../found/blockers').said(window, (s) => s.loopRanLate && s.loopWasBlocked) : null;
    return {
      summary: `The event loop was blocked for up to ${ms(max)} in ${hot.length} of the last ${window.length} intervals: every request, timer and callback waited that long.${said ? ` ${said.text}` : ''}`,
      evidence: {
        intervals: hot.length,
        windowIntervals: window.length,
        maxDelaySeconds: max,
        maxP99Seconds: Math.max(...hot.map((s) => s.delayP99 || 0)),
        // ruled out: as late, but mostly while the main thread waited for a CPU
        intervalsWaitingForCpu: late.length - hot.length,
        minCpuShare: shares.length ? round(Math.min(...shares), 3) : null,
        ...(said ? { blockers: said.evidence } : {}),
      },
      // Advice that fits the blockers named; the general advice where none was.
      advice: said && said.advice.length ? said.advice : [
        'Move CPU-heavy work (JSON of large bodies, crypto, compression, templating) to worker_threads or another service, or split it into chunks that yield (setImmediate).',
        'Look for synchronous I/O (fs.*Sync, child_process.*Sync) on request paths.',
      ],
      impact: { loopBlockedSeconds: blocked, score: blocked / windowSeconds(window) },
    };
  },
});
