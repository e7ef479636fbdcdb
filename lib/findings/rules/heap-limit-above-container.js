'use strict';

const { defineRule } = require('../rule');
const { findPoint } = require('../../snapshot/snapshot');

const mb = (b) => Math.round(b / 1048576);

/**
 * heap-limit-above-container: the V8 heap may grow close to or past the container's memory
 * limit, so the process is OOM-killed before V8 collects hard or reports heap exhaustion.
 */
module.exports = defineRule({
  id: 'heap-limit-above-container',
  limits: {
    heapShareOfContainer: 0.9, // a heap limit this close to the container's leaves no room for the rest
  },
  docs: {
    means: 'the V8 heap limit leaves no room under the container\'s memory limit: an OOM kill instead of a heap error',
    fires: (l) => `the V8 heap limit is ${Math.round(l.heapShareOfContainer * 100)} %+ of the cgroup memory limit`,
    impact: 'a risk, not time lost yet: critical when the heap limit is at or above the container\'s, else half the critical score (a warning)',
    advice: 'the `--max-old-space-size` to use (75 % of the limit)',
    example: '`--max-old-space-size=512` in a 256 MiB container: "The V8 heap may grow to 560 MiB but the container allows 256 MiB: the process is OOM-killed before V8 collects garbage hard or reports heap exhaustion.", with the advice `--max-old-space-size=192`',
  },
  // evaluate() reads the latest interval's limits only: one object for the whole window.
  latestOnly: true,
  interval(sample, kept) {
    const value = (name) => {
      const p = findPoint(sample.points, name);
      return p ? p.value : undefined;
    };
    const out = kept || { heapLimit: undefined, containerLimit: undefined };
    // Stored only when they change: the limits are numbers above 2^31 (a heap number each, from
    // the sample) that stay the same, and a kept one would otherwise hold this sample's.
    const heapLimit = value('v8js.memory.heap.limit');
    if (out.heapLimit !== heapLimit) out.heapLimit = heapLimit;
    const containerLimit = value('nodejs.memory.constrained');
    if (out.containerLimit !== containerLimit) out.containerLimit = containerLimit;
    return out;
  },
  // Nothing to fire on: the latest limits (what evaluate() reads) leave the heap room.
  quiet: (s, lim) => !roomless(s.own['heap-limit-above-container'], lim),
  evaluate(window, lim) {
    const last = window[window.length - 1].own['heap-limit-above-container'];
    if (!roomless(last, lim)) return null;
    const suggested = Math.floor((last.containerLimit * 0.75) / 1048576);
    return {
      summary: `The V8 heap may grow to ${mb(last.heapLimit)} MiB but the container allows ${mb(last.containerLimit)} MiB: the process is OOM-killed before V8 collects garbage hard or reports heap exhaustion.`,
      evidence: { heapLimitBytes: last.heapLimit, containerLimitBytes: last.containerLimit },
      advice: [
        `Set --max-old-space-size=${suggested} (about 75 % of the container limit, leaving room for buffers, native memory and code), e.g. NODE_OPTIONS=--max-old-space-size=${suggested}.`,
        'Or raise the container memory limit to fit the heap limit plus off-heap memory.',
      ],
      // A risk, not time lost yet: the process is OOM-killed before the heap limit is reached.
      impact: { score: last.heapLimit >= last.containerLimit ? 1 : lim.criticalScore / 2 },
    };
  },
});

// The heap limit leaves no room under the container's.
function roomless(last, lim) {
  return Boolean(last.containerLimit && last.heapLimit && !(last.heapLimit < lim.heapShareOfContainer * last.containerLimit));
}
