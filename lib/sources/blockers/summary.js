'use strict';

// What a CPU profile of a block says, reduced to a few lines (run in the watchdog's worker, so
// the main thread never walks a profile): the block's samples up to its end, grouped by the
// frame that was running (with the app's own first frame under it and the package it is in),
// costliest first with their share of the samples, and the share V8's garbage collector had.

const MAX_BLOCKERS = 5;
const GC = '(garbage collector)';
// V8's pseudo-frames: no JavaScript running (idle, native code outside a JS call, the profiler's root).
const PSEUDO = new Set(['(root)', '(program)', '(idle)']);

/**
 * @typedef {object} Frame
 * @property {string} function the function's name ('(anonymous)' when it has none)
 * @property {string} file path relative to the app's root, or node:..., as V8 has it
 * @property {number} line 1-based: where it ran in the sampled frame (V8's line ticks), else the function's first line
 * @property {string | null} package the package under node_modules, if any
 */

/**
 * @typedef {object} Blocker
 * @property {Frame} frame the frame that was running (the top of the stack)
 * @property {Frame | null} appFrame the app's own first frame under it (itself when it is the app's)
 * @property {Frame | null} call the frame the app's frame called on the way to it: the API or the
 *   package entry the app called (null when the running frame is the app's, or no app frame)
 * @property {number} share of the block's sampled time
 */

/**
 * @param {any} profile a Profiler.stop profile (nodes, samples, timeDeltas, startTime in us)
 * @param {{ endUs: number, root: string }} opts endUs: the block's end on V8's clock (the
 *   monotonic clock, in microseconds, as process.hrtime); root: the app's directory
 * @returns {{ samples: number, capturedMs: number, gcShare: number, blockers: Blocker[] }}
 */
function summarize(profile, { endUs, root }) {
  const out = { samples: 0, capturedMs: 0, gcShare: 0, blockers: [] };
  if (!profile || !Array.isArray(profile.nodes) || !Array.isArray(profile.samples)) return out;
  const nodes = new Map();
  for (const n of profile.nodes) nodes.set(n.id, n);
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children || []) parent.set(c, n.id);
  const counts = new Map(); // node id -> samples in the block
  let t = profile.startTime;
  let first = -1;
  let last = -1;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] || 0;
    if (t > endUs) break;
    const node = nodes.get(profile.samples[i]);
    if (!node || PSEUDO.has(node.callFrame.functionName) && !node.callFrame.url) continue;
    if (first < 0) first = t;
    last = t;
    counts.set(node.id, (counts.get(node.id) || 0) + 1);
    out.samples++;
  }
  if (out.samples === 0) return out;
  out.capturedMs = (last - first) / 1000;
  const groups = new Map();
  let gc = 0;
  for (const [id, n] of counts) {
    const node = nodes.get(id);
    if (node.callFrame.functionName === GC) {
      gc += n;
      continue;
    }
    const frame = frameOf(node, root, true);
    let appFrame = null;
    let below = -1; // the node the app's frame called
    for (let at = id; at !== undefined; below = at, at = parent.get(at)) {
      if (isApp(nodes.get(at).callFrame.url)) {
        appFrame = frameOf(nodes.get(at), root, at === id);
        break;
      }
    }
    let call = null;
    if (appFrame && below >= 0) call = below === id ? frame : frameOf(nodes.get(below), root, false);
    const key = `${frame.function}\0${frame.file}\0${frame.line}\0${appFrame ? `${appFrame.file}:${appFrame.line}` : ''}`;
    const g = groups.get(key);
    if (g) g.n += n;
    else groups.set(key, { frame, appFrame, call, n });
  }
  out.gcShare = gc / out.samples;
  out.blockers = [...groups.values()].sort((a, b) => b.n - a.n).slice(0, MAX_BLOCKERS)
    .map((g) => ({ frame: g.frame, appFrame: g.appFrame, call: g.call, share: g.n / out.samples }));
  return out;
}

/** Whether a script URL is the app's own code: a file outside node_modules and Node's internals. */
function isApp(url) {
  return typeof url === 'string' && url !== '' && !url.startsWith('node:') && !/[\\/]node_modules[\\/]/.test(url) && !/^(evalmachine|internal)/.test(url);
}

/**
 * @param {any} node a profile node
 * @param {string} root
 * @param {boolean} leaf whether the sample's time was spent in this frame (its line ticks tell where)
 * @returns {Frame}
 */
function frameOf(node, root, leaf) {
  const cf = node.callFrame;
  let file = String(cf.url || '');
  if (file.startsWith('file://')) file = decodeURIComponent(file.slice(7));
  let line = cf.lineNumber + 1;
  if (leaf && Array.isArray(node.positionTicks) && node.positionTicks.length > 0) {
    line = node.positionTicks.reduce((a, b) => (b.ticks > a.ticks ? b : a)).line;
  }
  const m = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(file);
  if (root && file.startsWith(`${root}/`)) file = file.slice(root.length + 1);
  return { function: cf.functionName || '(anonymous)', file, line, package: m ? m[1].replace(/\\/g, '/') : null };
}

module.exports = { summarize, MAX_BLOCKERS, _internal: { isApp, frameOf } };
