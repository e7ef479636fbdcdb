'use strict';

// V8's GC pauses while the blockers capture runs (blockers/capture.js): its gc entries kept in a
// ring (start and duration on hrtime's ns scale, kind), and a block's share of them. Full
// collections (mark-compact, its incremental steps, weak callbacks) are the GC's share of a
// block; scavenges stay with the code that allocated (a parser's strings can cost it most of its
// time in them): their share is said, not taken out.

// GC pauses remembered: enough to cover the blocks of an interval.
const GC_RING = 32;

class GcPauses {
  #start = new Float64Array(GC_RING);
  #duration = new Float64Array(GC_RING);
  #kind = new Uint8Array(GC_RING);
  #at = 0;
  /** @type {import('perf_hooks').PerformanceObserver | null} */
  #observer;

  /** @param {number} offsetNs performance.now() (ms) to hrtime (ns): hrtime = offsetNs + now * 1e6 */
  constructor(offsetNs) {
    const { PerformanceObserver } = require('perf_hooks');
    this.#observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        const i = this.#at++ % GC_RING;
        this.#start[i] = offsetNs + e.startTime * 1e6;
        this.#duration[i] = e.duration * 1e6;
        const d = /** @type {any} */ (e).detail;
        this.#kind[i] = d && typeof d.kind === 'number' ? d.kind : 0;
      }
    });
    this.#observer.observe({ entryTypes: ['gc'] });
  }

  /**
   * The full collections' and the scavenges' time inside [start, end] (hrtime ns), and the kind
   * of the longest full one ('major', ..., or null).
   * @returns {{ gcNs: number, minorNs: number, kind: string | null }}
   */
  within(start, end) {
    let gcNs = 0;
    let minorNs = 0;
    let longest = 0;
    let kind = -1;
    const minor = require('perf_hooks').constants.NODE_PERFORMANCE_GC_MINOR;
    for (let i = 0; i < GC_RING && i < this.#at; i++) {
      const a = Math.max(start, this.#start[i]);
      const b = Math.min(end, this.#start[i] + this.#duration[i]);
      if (b <= a) continue;
      if (this.#kind[i] === minor) {
        minorNs += b - a;
        continue;
      }
      gcNs += b - a;
      if (b - a > longest) {
        longest = b - a;
        kind = this.#kind[i];
      }
    }
    return { gcNs, minorNs, kind: kind < 0 ? null : gcKindName(kind) };
  }

  close() {
    if (this.#observer) this.#observer.disconnect();
    this.#observer = null;
  }
}

/** perf_hooks' GC kind (entry.detail.kind) by OpenTelemetry's v8js.gc.type names. */
function gcKindName(kind) {
  const c = require('perf_hooks').constants;
  if (kind === c.NODE_PERFORMANCE_GC_MAJOR) return 'major';
  if (kind === c.NODE_PERFORMANCE_GC_MINOR) return 'minor';
  if (kind === c.NODE_PERFORMANCE_GC_INCREMENTAL) return 'incremental';
  if (kind === c.NODE_PERFORMANCE_GC_WEAKCB) return 'weakcb';
  return 'other';
}

module.exports = { GcPauses };
