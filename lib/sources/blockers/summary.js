'use strict';

// A block's stack samples reduced to a few lines (run in the watchdog's worker, so the main
// thread never walks them): grouped by the frame that ran (with the app's own first frame under
// it and the package it is in), costliest first with their share of the block's sampled time.

const path = require('path');
const { functionKey } = require('../../core/frames');

const MAX_BLOCKERS = 5;

/**
 * @typedef {object} Frame
 * @property {string} function the function's name ('(anonymous)' when it has none)
 * @property {string} file path relative to the app's root, or node:..., as V8 has it
 * @property {number} line 1-based, where it ran (the sampled frame) or called the frame above
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
 * @param {{ frames: { function: string, filename: string, lineno: number }[], ms: number }[]} samples
 *   the stacks sampled (top first, as Sentry's capture gives them), each with the time it covers
 * @param {string} root the app's directory
 * @returns {{ samples: number, capturedMs: number, gcShare: number, blockers: Blocker[] }}
 */
function summarize(samples, root) {
  const out = { samples: samples.length, capturedMs: 0, gcShare: 0, blockers: [] };
  const groups = new Map();
  for (const s of samples) {
    out.capturedMs += s.ms;
    const frames = s.frames;
    let app = -1;
    for (let i = 0; i < frames.length; i++) {
      if (isApp(frames[i].filename)) {
        app = i;
        break;
      }
    }
    // One blocker a function (a loop samples at many of its lines), its frames those of the line
    // with the most time; an anonymous function is told apart by its line.
    const top = frames[0];
    const key = `${functionKey(frameOf(top, root))}\0${app >= 0 ? functionKey(frameOf(frames[app], root)) : ''}`;
    const at = `${top.lineno}\0${app >= 0 ? frames[app].lineno : ''}`;
    const g = groups.get(key);
    if (!g) {
      groups.set(key, { frames, app, ms: s.ms, lines: new Map([[at, s.ms]]), best: s.ms });
      continue;
    }
    g.ms += s.ms;
    const ms = (g.lines.get(at) || 0) + s.ms;
    g.lines.set(at, ms);
    if (ms > g.best) Object.assign(g, { frames, app, best: ms });
  }
  if (out.capturedMs <= 0) return out;
  out.blockers = [...groups.values()].sort((a, b) => b.ms - a.ms).slice(0, MAX_BLOCKERS).map((g) => ({
    frame: frameOf(g.frames[0], root),
    appFrame: g.app >= 0 ? frameOf(g.frames[g.app], root) : null,
    call: g.app > 0 ? frameOf(g.frames[g.app - 1], root) : null,
    share: g.ms / out.capturedMs,
  }));
  return out;
}

// uvscope's own code (its lib/ and register.js, wherever it is installed): never the app's frame
// (its dns.lookup wrapper is on the stack of every lookup the app makes).
const OWN = path.resolve(__dirname, '..', '..');
const OWN_FILES = [`${OWN}${path.sep}`, path.resolve(OWN, '..', 'register.js')];

/** Whether a script is the app's own code: a file outside node_modules, Node's internals and uvscope. */
function isApp(file) {
  return typeof file === 'string' && file !== '' && file !== '<unknown>' && !file.startsWith('node:') && !/[\\/]node_modules[\\/]/.test(file) && !/^(evalmachine|internal|\[eval)/.test(file) &&
    !file.startsWith(OWN_FILES[0]) && file !== OWN_FILES[1];
}

/**
 * @param {{ function: string, filename: string, lineno: number }} f a frame as Sentry's capture gives it
 * @param {string} root
 * @returns {Frame}
 */
function frameOf(f, root) {
  let file = String(f.filename || '');
  if (file.startsWith('file://')) file = decodeURIComponent(file.slice(7));
  const m = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(file);
  if (root && file.startsWith(`${root}/`)) file = file.slice(root.length + 1);
  const name = !f.function || f.function === '?' ? '(anonymous)' : f.function;
  return { function: name, file, line: f.lineno, package: m ? m[1].replace(/\\/g, '/') : null };
}

module.exports = { summarize, MAX_BLOCKERS, _internal: { isApp, frameOf } };
