'use strict';

const { defineRule } = require('../rule');
const throttled = require('./cpu-throttled');
const { signalLimits } = require('../signals');
const { ms, pct } = require('../../core/format');

/**
 * cpu-starved: the app's own threads want more CPUs than it has, and its pool threads (Node 22+)
 * or its main thread spend a large share of the window waiting for one. Names what waited (the
 * lookups, fs calls and the loop's lateness) and what takes the CPU (the tracer's job kinds,
 * types, callers and routes; the loop's own JavaScript).
 */
module.exports = defineRule({
  id: 'cpu-starved',
  limits: {
    // the signals cpuStarvedPool and cpuStarvedLoop read these (lib/findings/signals.js)
    ...signalLimits('cpuStarvedThreads', 'cpuStarvedWaitS', 'cpuStarvedDemandMargin', 'cpuStarvedDemandAlone',
      'cpuStarvedLoopShare', 'cpuStarvedLoopRatio', 'cpuStarvedBudgetShare'),
    cpuStarvedIntervals: 4, // in at least this many of some twice as many consecutive intervals
  },
  docs: {
    means: 'the app\'s threads want more CPUs than it has: pool jobs (lookups, fs, crypto, zlib) and the event loop wait for a CPU, not for a thread or the network',
    fires: (l) => `in ${l.cpuStarvedIntervals}+ of ${2 * l.cpuStarvedIntervals} consecutive intervals (a sustained pattern; one odd interval does not break it, a burst of fewer does not make it), either (Node 22+, named pool threads, \`/proc/self/task/<tid>/schedstat\`) pool threads were ${l.cpuStarvedThreads}+ threads on average ready to run but waiting for a CPU, at ${ms(l.cpuStarvedWaitS)}+ per wait (a wake-up waits microseconds even with a CPU free; a thread behind others on a run queue waits a scheduler slice, milliseconds), while the pool's busy threads and the main thread (on a CPU or waiting for one) wanted the CPU budget + ${l.cpuStarvedDemandMargin} CPUs or more, + ${l.cpuStarvedDemandAlone} while the process used under ${pct(l.cpuStarvedBudgetShare)} of its budget (more threads want a CPU than there are: the app starves itself; on a host busy with other work a light thread's waits inflate this sum, one busy thread's cannot exceed 1); or (every major) the main thread waited for a CPU ${pct(l.cpuStarvedLoopShare)}+ of the interval and ${l.cpuStarvedLoopRatio}x+ as long as it ran (one thread busy beside the loop on one CPU makes it wait about a quarter of the time: not starved), while the process used ${pct(l.cpuStarvedBudgetShare)}+ of its CPU budget (process.cpuUsage(): a host busy with other work leaves the app less, and is not the app starving itself). The CPU budget is the metric \`process.cpu.budget\` where a source gives it (a cgroup quota, the affinity mask), else \`os.availableParallelism()\`. Not while a CPU quota throttled the process in the window (cpu-throttled fires instead: the quota is the cause and its finding names it)`,
    impact: 'the time pool threads and the main thread spent waiting for a CPU (thread-seconds per second of the window); `requests`: the lookups in the window',
    advice: 'what waited (lookups\' mean and slowest time, fs calls, the loop\'s wait and lateness) and what takes the CPU: the tracer\'s job kind, type, call sites and HTTP routes for pool work, the loop\'s own CPU for JavaScript (with what ran in its blocks, where the capture named it); on Node 20 (pool threads not named) what cannot be told apart. Advice: CPU work on fewer threads than the CPU budget (worker_threads sized to it), a lower compression level or cached output, fewer pbkdf2 iterations, or more CPU',
    example: 'the lab\'s `starve` incident (zlib level 9 in short jobs for 16 clients on a pool of 4, pinned to one CPU; Node 24, on a loaded machine): "Pool threads wait for a CPU: on average 2.76 of 4 threads were ready to run but waited for one (7.4 ms per wait: threads short of a CPU, not wake-ups) while 0.56 computed, in 11 of 17 intervals; the app\'s pool and loop wanted 4.1 CPUs and it has 1 CPU (os.availableParallelism()). The CPU goes to zlib (zlib) jobs on the pool: 100 % of the time non-DNS jobs spent there, ... called from examples/incidents/apps/compress-app.js:32 while serving GET /export; ..."',
  },
  // Nothing to fire on: neither the pool threads nor the main thread starved of a CPU.
  quiet: (s, lim) => !s.cpuStarved && lim.cpuStarvedIntervals > 0,
  evaluate(window, lim, context) {
    // A sustained pattern: half or more of some stretch of twice that many intervals (an odd
    // interval, when another process took the CPU for a moment, does not break it). This gate
    // runs every sample, a loop that allocates nothing; the figures only once it passes.
    if (starvedInStretch(window, 2 * lim.cpuStarvedIntervals) < lim.cpuStarvedIntervals) return null;
    // A CPU quota that throttled the process explains the waits (a throttled thread waits on the
    // run queue): cpu-throttled names the quota, what used the CPU and the limit that covers it.
    if (throttled.evaluate(window, lim, context) !== null) return null;
    // What it says (lib/findings/found/cpu-starved.js) loads the first time the gate passes.
    return require('../found/cpu-starved').found(window, window.filter((s) => s.cpuStarved), window.filter((s) => s.cpuStarvedPool));
  },
});

// The most starved intervals (the signals cpuStarvedPool or cpuStarvedLoop) in any stretch of
// `span` consecutive ones, in a loop that allocates nothing.
function starvedInStretch(window, span) {
  let best = 0;
  let count = 0;
  for (let i = 0; i < window.length; i++) {
    if (window[i].cpuStarved) count++;
    if (i >= span && window[i - span].cpuStarved) count--;
    if (count > best) best = count;
  }
  return best;
}
