'use strict';

// What a blocker is called, in one place for every reader: the findings' sentences
// (lib/findings/found/blockers.js) and each block's record for the tracers' victims
// (capture.js, uvscope:eventloop.block). Pure functions of the frames summary.js makes.

// The public module of a file of Node's: node:zlib, and its internals that hold public APIs
// (node:internal/crypto/pbkdf2 holds crypto.pbkdf2Sync); null for other internals.
function nodeModule(file) {
  if (!file.startsWith('node:')) return null;
  const m = file.slice(5);
  const inner = /^internal\/(crypto|fs|child_process)\b/.exec(m);
  if (inner) return inner[1];
  return m.startsWith('internal/') ? null : m;
}

// Functions of Node's whose own name is not the API's: zlib's *Sync convenience methods are all
// one function, syncBufferWrapper (lib/zlib.js createConvenienceMethod).
const NODE_NAMES = Object.freeze({ 'zlib.syncBufferWrapper': 'zlib.*Sync (gzipSync, deflateSync, ...)' });

/**
 * A frame in words: `zlib.gzipSync` (Node's API), csv-parse's `parse` (a package), `render`
 * (src/page.js:12) (the app's), `writeSync` (native code).
 * @param {any} f a Frame
 */
function frameName(f) {
  const fn = `\`${f.function}\``;
  if (f.file.startsWith('node:')) {
    const mod = nodeModule(f.file);
    if (!mod) return `${fn} (Node.js internals, ${f.file})`;
    const name = `${mod}.${f.function}`;
    return `\`${NODE_NAMES[name] || name}\``;
  }
  if (f.package) return `${f.package}'s ${fn}`;
  if (!f.file) return `${fn} (native code)`;
  return `${fn} (${f.file}:${f.line})`;
}

/**
 * A blocker in words, as every finding names it: what ran, through what the app called, from
 * where in the app ("csv-parse's `parse` called from src/import.js:9").
 * @param {{ frame: any, call?: any, appFrame?: any }} b
 * @returns {string}
 */
function blockerName(b) {
  const app = b.appFrame;
  if (app && !b.call) return `\`${app.function}\` at ${app.file}:${app.line}`;
  const what = frameName(b.call || b.frame);
  return app ? `${what} called from ${app.file}:${app.line}` : what;
}

/**
 * A blocker named short, with where the app called it: `spinFor` and its caller src/x.js:9, or
 * `crypto.pbkdf2Sync` called from it (what a victim span is told, and listen-queue-overflow).
 * @param {{ frame: any, call?: any, appFrame?: any }} b
 * @returns {{ name: string, caller?: string }}
 */
function shortName(b) {
  const app = b.appFrame;
  const name = app && !b.call ? `\`${app.function}\`` : frameName(b.call || b.frame);
  return app ? { name, caller: `${app.file}:${app.line}` } : { name };
}

module.exports = { nodeModule, NODE_NAMES, frameName, blockerName, shortName };
