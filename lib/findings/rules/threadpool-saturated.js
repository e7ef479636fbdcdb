'use strict';

const { defineRule } = require('../rule');
const { signalLimits } = require('../signals');
const { poolHeldRun } = require('../pool');
const { ms } = require('../../core/format');

/**
 * threadpool-saturated: no thread was free for a job, in enough consecutive intervals, and DNS
 * (which can hold only its slots) is not what held the pool. Names the holder: with the tracer
 * armed, the job kind and type with the most pool time, its call sites and routes; without it,
 * fs when the fs work Node lists can fill the threads, and otherwise the work Node does not list.
 */
module.exports = defineRule({
  id: 'threadpool-saturated',
  limits: {
    ...signalLimits('poolWaitS'), // the signal poolHeld reads it (lib/findings/signals.js)
    poolSaturatedIntervals: 3, // ...in at least this many consecutive intervals
  },
  docs: {
    means: 'work other than DNS holds every threadpool thread, and lookups, fs calls, crypto and zlib wait for one',
    fires: (l) => `no thread was free for a job in ${l.poolSaturatedIntervals}+ consecutive intervals: the \`work\` probe waited ${ms(l.poolWaitS)} beyond the loop's own delay (or is still waiting); single intervals are a host short of CPU, not a held pool. DNS can hold at most its (size+1)/2 slots, so this is work other than DNS, and the finding never blames DNS for it`,
    impact: 'the time the app\'s lookups spent in flight over the window (waiting for a thread, almost all of it) and the fs calls\' time from submission to callback where the tracer measured it',
    advice: 'the holder: with the tracer armed (`details.threadpool.tracer`), the kind and type (`crypto (pbkdf2)`; an addon\'s work whose resource name says nothing, node-addon-api\'s default `generic` as sharp\'s, by the package that submitted it: `sharp (addon work)`), its share of the time non-DNS jobs spent on the pool, call sites and HTTP routes; without it, `fs` when the fs requests pending could fill every thread, or work Node does not list (async crypto, zlib, addons) when the dns and fs work it lists could not, with busy pool threads where known. What waits behind it (dns probe wait, slowest lookup, pending fs). Advice with figures: move the work to `worker_threads` sized to the CPUs the process may use (its CPU budget: a container\'s CPU quota or the affinity mask), or lower its cost (pbkdf2 iterations, scrypt N), and the `UV_THREADPOOL_SIZE` that gives the holder\'s peak its own threads and leaves today\'s pool to lookups and fs (not the peak of everything pending: starved lookups pile up). Threads the holder held but mostly off a CPU (busy threads, Node 22+: under half of them computing or runnable, an addon waiting on threads of its own) get advice for that instead: a larger pool, fewer concurrent calls into the package, or its own concurrency setting, never worker_threads; where busy threads are not read (Node 20) an addon\'s holder gets both cases, saying which cannot be told',
    example: 'the lab\'s `crypto` incident (pbkdf2 on a pool of 4): "The threadpool is held by crypto (pbkdf2): up to 16 jobs in flight for 4 threads, 88 % of the time non-DNS jobs spent on the pool (submission to callback), submitted while serving POST /login. A job waited up to 672 ms for a thread; dns.lookup waited up to 2.09 s for a thread (up to 10 lookups pending, the slowest took 2.69 s); ..."',
  },
  // Nothing to fire on: the pool was not held (a run of held intervals is what fires).
  quiet: (s, lim) => !s.poolHeld && lim.poolSaturatedIntervals > 0,
  evaluate(window, lim) {
    // A held pool holds for a while: a run of consecutive intervals. A host short of CPU (other
    // processes, a CPU quota) delays the probe's thread now and then, in single intervals. This
    // gate runs every sample, a loop that allocates nothing; the figures only once it passes.
    if (poolHeldRun(window) < lim.poolSaturatedIntervals) return null;
    // What it says (lib/findings/found/threadpool-saturated.js) loads the first time the gate passes.
    return require('../found/threadpool-saturated').found(window);
  },
});
