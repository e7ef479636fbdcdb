'use strict';

// What the threadpool source produces: its metrics and the bucket bounds of its histograms, read
// by the catalog (lib/snapshot/catalog.js) and by the sampler and tracer that fill them.

const { metricDef } = require('../metric-def');

/** Upper bounds for threadpool queue wait, from a free thread (~0.1 ms) to a long backlog. */
const QUEUE_WAIT_BUCKETS = Object.freeze([0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);

/** Upper bounds for a threadpool job's time from submission to callback (queue wait and run). */
const JOB_DURATION_BUCKETS = Object.freeze([0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]);

/** @type {readonly import('../metric-def').MetricDef[]} */
const METRICS = Object.freeze([
  metricDef('nodejs.uv.threadpool.size', 'gauge', '{thread}', [],
    'Threads in the libuv threadpool (UV_THREADPOOL_SIZE parsed and clamped as libuv does: default 4, 1 to 1024).'),
  metricDef('nodejs.uv.threadpool.dns_slots', 'gauge', '{thread}', [],
    'Threads that may run getaddrinfo/getnameinfo at once: libuv caps slow I/O at (size+1)/2.'),
  metricDef('nodejs.uv.threadpool.pending', 'gauge', '{request}', ['nodejs.uv.threadpool.kind'],
    'Threadpool work submitted and not completed (kind dns: lookups, fs: file system requests, as Node lists them; while the tracer is armed also crypto, zlib and other (addons), counted from their submission).'),
  metricDef('nodejs.uv.threadpool.queued', 'gauge', '{request}', ['nodejs.uv.threadpool.kind'],
    'Estimated threadpool work waiting for a thread: pending beyond what the pool (and its DNS slots) can run at once.'),
  metricDef('nodejs.uv.threadpool.queue_wait', 'histogram', 's', ['nodejs.uv.threadpool.queue'],
    'Time a probe job waited for the threadpool, measured by one cheap job at a time per queue (dns: a getnameinfo of 127.0.0.1, which takes a DNS slot as a getaddrinfo does; work: an fs.access of /, on the general queue as async crypto and zlib jobs), launched after a sample when the pool has work (jobs Node lists pending, busy pool threads, or the last probe waited 5 ms+); where busy threads cannot be read (Node 20) the work probe runs after every sample. An idle pool is not probed. The wait includes the event loop\'s delay in running the probe\'s callback; the part of it the loop spent idle (the pool\'s, details.threadpool.probes.*.heldSeconds) arms the tracer.',
    QUEUE_WAIT_BUCKETS, { onePerSample: true }),
  metricDef('nodejs.uv.threadpool.job.duration', 'histogram', 's', ['nodejs.uv.threadpool.kind', 'nodejs.uv.threadpool.job.type'],
    'Threadpool jobs seen by the tracer while armed, from submission to callback (queue wait plus run), by kind and provider type (PBKDF2REQUEST, ZLIB, FSREQCALLBACK, an addon\'s own name...; an addon\'s name that says nothing, node-addon-api\'s `generic`, with the package that submitted the work: `sharp (generic)`).',
    JOB_DURATION_BUCKETS, {
      perEvent: { channel: 'threadpoolJobEnd', value: 'seconds', attributes: { 'nodejs.uv.threadpool.kind': 'kind', 'nodejs.uv.threadpool.job.type': 'type' } },
    }),
  metricDef('nodejs.uv.threadpool.busy', 'gauge', '{thread}', ['nodejs.uv.threadpool.thread.state'],
    'Mean pool threads over the last interval from the kernel\'s per-thread CPU accounting (Linux, Node 22+): computing = on a CPU, runnable = ready but waiting for a CPU. runnable is every wait on a run queue, each wake-up\'s own microseconds included: with many very short jobs these alone reach tenths of a thread with no thread short of a CPU (details.threadpool.busy.meanWaitSeconds tells: microseconds per wait are wake-ups, milliseconds are contention).'),
  metricDef('uvscope.tracer.armed', 'gauge', '1', [],
    '1 while the threadpool tracer (async_hooks) is armed, else 0 (UVSCOPE_TRACER=auto arms it when the pool looks saturated).'),
  metricDef('uvscope.probe.in_flight', 'gauge', '{request}', ['nodejs.uv.threadpool.queue'],
    'uvscope\'s own threadpool probe still running at sampling time (0 or 1); it is included in the pending and queued figures.'),
]);

module.exports = { METRICS, QUEUE_WAIT_BUCKETS, JOB_DURATION_BUCKETS };
