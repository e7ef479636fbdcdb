'use strict';

// What blocked the event loop over some intervals (their summary.blocks, lib/findings/blockers.js),
// in one place for every finding that says it (eventloop-blocked, listen-queue-overflow,
// cpu-starved, cpu-throttled): the blockers costliest first with their share of the blocked time,
// V8's garbage collector, what could not be seen; their names, the sentence and the advice that
// fits them. Loaded once a finding needs it.

const { ms, pct, round } = require('../../core/format');
const { nodeModule, NODE_NAMES, frameName, blockerName, shortName } = require('../../sources/blockers/names');

// Blockers named in a finding; a share under MIN_SHARE is left out of the sentence (not the evidence).
const MAX_NAMED = 5;
const MIN_SHARE = 0.05;

/**
 * @typedef {object} WindowBlockers
 * @property {boolean} capturing the capture ran in every interval read
 * @property {string | null} unavailable why it did not, where it did not (the latest reason)
 * @property {number} thresholdSeconds the shortest block it times
 * @property {number} blocks blocks timed
 * @property {number} seconds their durations, summed
 * @property {number} maxSeconds
 * @property {number} gcSeconds in V8's garbage collector
 * @property {number} maxGcSeconds the most GC in one block
 * @property {number} uncapturedSeconds in blocks no stack sample saw into
 * @property {string | null} uncaptured why not (the longest such block's reason)
 * @property {number} missed captures that did not complete
 * @property {{ usedBytes: number, limitBytes: number } | null} heap after the block with the most GC
 * @property {{ name: string, frame: any, call: any, appFrame: any, route: string | null, seconds: number, share: number }[]} named
 *   costliest first, share of `seconds`
 */

/**
 * The intervals whose blocks belong to the picked ones: each picked interval and the one after it.
 * The watchdog reports a block once its capture is stopped, after the block: a sampling timer due
 * during the block fires first, and the block lands in the next interval.
 * @param {readonly any[]} window summaries, oldest first
 * @param {(s: any) => boolean} pick
 * @returns {any[]}
 */
function reportedIn(window, pick) {
  const out = [];
  let before = false;
  for (const s of window) {
    const now = pick(s);
    if (now || before) out.push(s);
    before = now;
  }
  return out;
}

/**
 * The blocks of some intervals together, or null when none of them has the capture's details
 * (an agent without it: nothing is said of blockers then).
 * @param {readonly any[]} intervals summaries (their .blocks)
 * @returns {WindowBlockers | null}
 */
function blockersOver(intervals) {
  /** @type {WindowBlockers | null} */
  let out = null;
  const all = new Map(); // key -> the blocker over the intervals
  let unseen = 0; // the most uncaptured seconds in one interval
  for (const s of intervals) {
    const b = s.blocks;
    if (!b) continue;
    if (!out) {
      out = { capturing: true, unavailable: null, thresholdSeconds: 0, blocks: 0, seconds: 0, maxSeconds: 0, gcSeconds: 0, maxGcSeconds: 0, uncapturedSeconds: 0, uncaptured: null, missed: 0, heap: null, named: [] };
    }
    if (!b.capturing) {
      out.capturing = false;
      out.unavailable = b.unavailable;
    }
    out.thresholdSeconds = b.thresholdSeconds || out.thresholdSeconds;
    out.blocks += b.count;
    out.seconds += b.seconds;
    out.maxSeconds = Math.max(out.maxSeconds, b.maxSeconds);
    out.gcSeconds += b.gcSeconds;
    if (b.maxGcSeconds > out.maxGcSeconds) {
      out.maxGcSeconds = b.maxGcSeconds;
      out.heap = b.heap;
    }
    if (b.uncapturedSeconds > unseen) {
      unseen = b.uncapturedSeconds;
      out.uncaptured = b.uncaptured || out.uncaptured;
    }
    out.uncapturedSeconds += b.uncapturedSeconds;
    out.missed += b.missed;
    for (const x of b.blockers) {
      const same = all.get(x.key);
      if (same) {
        same.seconds += x.seconds;
        // the route of the interval where it cost the most
        if (x.seconds > same.most) Object.assign(same, { most: x.seconds, route: x.route || same.route });
        else if (!same.route) same.route = x.route;
      } else all.set(x.key, { frame: x.frame, call: x.call, appFrame: x.appFrame, route: x.route, seconds: x.seconds, most: x.seconds });
    }
  }
  if (!out) return null;
  const total = out.seconds;
  out.named = [...all.values()].sort((a, b) => b.seconds - a.seconds).slice(0, MAX_NAMED).map((x) => ({
    name: blockerName(x), frame: x.frame, call: x.call, appFrame: x.appFrame, route: x.route, seconds: x.seconds, share: total > 0 ? x.seconds / total : 0,
  }));
  return out;
}

/**
 * What blocked the loop, in one sentence (empty when nothing is known of it: no capture details).
 * @param {WindowBlockers | null} w
 * @returns {string}
 */
function blockersText(w) {
  if (!w) return '';
  if (w.blocks === 0) {
    if (!w.capturing) return `What blocked it was not captured: ${w.unavailable}.`;
    return `The watchdog timed no block of ${ms(w.thresholdSeconds)} or more on a CPU in these intervals${w.missed ? ` (${w.missed} capture${w.missed === 1 ? '' : 's'} did not complete)` : ''}, so nothing is named: shorter callbacks one after another, or callbacks that wait in the kernel (synchronous I/O: fs.*Sync, child_process.*Sync, which sleep rather than run), are not timed as blocks.`;
  }
  const parts = [];
  for (const x of w.named) {
    if (x.share >= MIN_SHARE) parts.push({ share: x.share, text: `${pct(x.share)} in ${x.name}${x.route ? ` while serving ${x.route}` : ''}` });
  }
  const gc = w.seconds > 0 ? w.gcSeconds / w.seconds : 0;
  if (gc >= MIN_SHARE) parts.push({ share: gc, text: `${pct(gc)} in V8's garbage collector (up to ${ms(w.maxGcSeconds)} in one block${w.heap ? `; the heap held ${mb(w.heap.usedBytes)} of its ${mb(w.heap.limitBytes)} limit after it` : ''})` });
  const unseen = w.seconds > 0 ? w.uncapturedSeconds / w.seconds : 0;
  if (unseen >= MIN_SHARE) parts.push({ share: unseen, text: `${pct(unseen)} in blocks no stack sample saw into (${w.uncaptured || 'not captured'})` });
  parts.sort((a, b) => b.share - a.share);
  const timed = `${w.blocks} block${w.blocks === 1 ? '' : 's'} of ${ms(w.thresholdSeconds)} or more timed in them (${ms(w.seconds)} in all, up to ${ms(w.maxSeconds)})`;
  if (parts.length === 0) return `Of the ${timed}, no one place had ${pct(MIN_SHARE)} of the time.`;
  return `Of the ${timed}: ${parts.map((p) => p.text).join(', ')}.`;
}

// What to call instead of a synchronous API of Node's, by module (base: the name without Sync).
const ASYNC_FORMS = Object.freeze({
  fs: (base) => `fs.promises.${base} (or fs.${base} with a callback): the work goes to the threadpool and the loop serves the rest meanwhile`,
  zlib: (base) => `${base ? `zlib.${base}` : 'its asynchronous form (zlib.gzip for zlib.gzipSync, ...)'} or a stream (zlib.create*): compression runs on the threadpool, not the loop`,
  crypto: (base) => `crypto.${base} with a callback: it runs on the threadpool, not the loop`,
  child_process: (base) => `child_process.${base}: the loop goes on while the child runs`,
});

/**
 * The advice that fits what blocked the loop: for each blocker named with a share, its
 * asynchronous or worker_threads alternative (a synchronous API of Node's, a package's entry, the
 * app's own code to chunk); for GC, the heap; for what could not be seen, where to look. Empty
 * when nothing was captured.
 * @param {WindowBlockers | null} w
 * @returns {string[]}
 */
function blockersAdvice(w) {
  if (!w || w.blocks === 0) return [];
  const out = [];
  for (const x of w.named) {
    if (x.share < 0.1 || out.length >= 3) continue;
    const f = x.call || x.frame;
    const mod = nodeModule(f.file);
    const from = x.appFrame ? ` (called from ${x.appFrame.file}:${x.appFrame.line})` : '';
    const share = `${pct(x.share)} of the blocked time`;
    const base = /Sync$/.test(f.function) ? f.function.slice(0, -4) : null;
    if (mod && ASYNC_FORMS[mod] && (base || NODE_NAMES[`${mod}.${f.function}`])) {
      out.push(`Replace ${frameName(f)}${from}, ${share}, with ${ASYNC_FORMS[mod](base)}.`);
    } else if (f.package) {
      out.push(`${f.package}'s \`${f.function}\`${from} has ${share}: use its asynchronous or streaming interface if it has one, else run it in worker_threads (a pool such as piscina), so the loop is free meanwhile.`);
    } else if (x.appFrame && !x.call) {
      out.push(`\`${x.appFrame.function}\` at ${x.appFrame.file}:${x.appFrame.line} has ${share}: split its work into chunks that yield to the loop (setImmediate between chunks), or move it to worker_threads.`);
    } else {
      out.push(`${x.name} has ${share}: call it less often or with less input on the loop, or move the work to worker_threads.`);
    }
  }
  const gc = w.seconds > 0 ? w.gcSeconds / w.seconds : 0;
  if (gc >= 0.1) {
    const h = w.heap;
    const full = h && h.limitBytes > 0 ? h.usedBytes / h.limitBytes : null;
    out.push(full !== null && full >= 0.8
      ? `V8's garbage collector has ${pct(gc)} of the blocked time and the heap is ${pct(full)} of its limit (${mb(h.usedBytes)} of ${mb(h.limitBytes)}): near the limit full collections come back to back. Find what holds the memory (a heap snapshot), or raise --max-old-space-size within the container's memory.`
      : `V8's garbage collector has ${pct(gc)} of the blocked time${h ? ` (the heap ${mb(h.usedBytes)} of its ${mb(h.limitBytes)} limit)` : ''}: allocate less on the loop (large strings and buffers, JSON of large bodies, objects kept across requests), so fewer objects survive to the old generation.`);
  }
  const unseen = w.seconds > 0 ? w.uncapturedSeconds / w.seconds : 0;
  if (unseen >= 0.1) out.push(`${pct(unseen)} of the blocked time was in blocks no stack sample saw into: one long native call that ended the block. Look for synchronous calls on the blocked path (fs, zlib and crypto *Sync calls, JSON.parse or JSON.stringify of a large body, a native addon) and use their asynchronous forms, a streaming parser, or worker_threads.`);
  return out;
}

/**
 * The costliest blocker of the picked intervals (and the one after each, reportedIn()), short,
 * for a finding that names what blocked the loop in passing (listen-queue-overflow):
 * { name, caller?, share }, or null when none is known.
 * @param {readonly any[]} window summaries, oldest first
 * @param {(s: any) => boolean} pick
 * @returns {{ name: string, caller?: string, share: number } | null}
 */
function topBlocker(window, pick) {
  const w = blockersOver(reportedIn(window, pick));
  if (!w || w.seconds <= 0) return null;
  const gc = w.gcSeconds / w.seconds;
  const top = w.named[0];
  if (top && top.share >= gc) {
    return { ...shortName(top), share: round(top.share, 3) };
  }
  return gc > 0 ? { name: 'V8\'s garbage collector', share: round(gc, 3) } : null;
}

/**
 * The figures of some intervals' blocks for a finding's evidence (frames included, rounded).
 * @param {WindowBlockers} w
 */
function blockersEvidence(w) {
  const share = (x) => (w.seconds > 0 ? round(x / w.seconds, 3) : 0);
  return {
    capturing: w.capturing,
    unavailable: w.unavailable,
    thresholdSeconds: w.thresholdSeconds,
    blocks: w.blocks,
    blockedSeconds: round(w.seconds, 3),
    maxBlockSeconds: round(w.maxSeconds, 3),
    named: w.named.map((x) => ({ name: x.name, share: round(x.share, 3), seconds: round(x.seconds, 3), route: x.route, frame: x.frame, call: x.call, appFrame: x.appFrame })),
    gcShare: share(w.gcSeconds),
    heap: w.heap,
    uncapturedShare: share(w.uncapturedSeconds),
    uncaptured: w.uncaptured,
    missedCaptures: w.missed,
  };
}

/**
 * What a finding says of the blockers of the picked intervals (and the one after each,
 * reportedIn()): its sentence, advice and evidence, or null when none of them has the capture's
 * details.
 * @param {readonly any[]} window summaries, oldest first
 * @param {(s: any) => boolean} pick the intervals the finding counts
 * @returns {{ text: string, advice: string[], evidence: object, blockers: WindowBlockers } | null}
 */
function said(window, pick) {
  const w = blockersOver(reportedIn(window, pick));
  return w ? { text: blockersText(w), advice: blockersAdvice(w), evidence: blockersEvidence(w), blockers: w } : null;
}

/**
 * The loop's blocks in a clause, for a CPU finding that names the loop's JavaScript as a CPU
 * taker (cpu-starved, cpu-throttled): "; of its blocks of 100 ms or more, 80 % of the time was in
 * csv-parse's `parse` called from src/import.js:9, 10 % in V8's garbage collector", or '' where
 * the capture named nothing in those intervals.
 * @param {readonly any[]} window summaries, oldest first
 * @param {(s: any) => boolean} pick the intervals the finding counts (with the one after each, reportedIn())
 * @returns {string}
 */
function loopTakersText(window, pick) {
  const intervals = reportedIn(window, pick);
  const w = intervals.some((s) => s.blocks) ? blockersOver(intervals) : null;
  if (!w || !(w.seconds > 0)) return '';
  const parts = w.named.filter((x) => x.share >= MIN_SHARE).slice(0, 2).map((x) => ({ share: x.share, text: `${pct(x.share)} in ${x.name}` }));
  const gc = w.gcSeconds / w.seconds;
  if (gc >= MIN_SHARE) parts.push({ share: gc, text: `${pct(gc)} in V8's garbage collector` });
  if (parts.length === 0) return '';
  parts.sort((a, b) => b.share - a.share);
  parts[0].text = parts[0].text.replace(/^(\d+ %) in/, '$1 of the time was in');
  return `; of its blocks of ${ms(w.thresholdSeconds)} or more, ${parts.map((p) => p.text).join(', ')}`;
}

function mb(bytes) {
  return bytes >= 1e9 ? `${round(bytes / 1e9, 2)} GB` : `${Math.round(bytes / 1e6)} MB`;
}

module.exports = { said, loopTakersText, blockersOver, blockerName, blockersText, blockersAdvice, blockersEvidence, topBlocker };
