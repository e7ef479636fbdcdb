'use strict';

// Whether the blockers capture can run here, and Sentry's native stack capture (an optional
// dependency) loaded for it once, the main thread registered with it (blockers/capture.js).

const NATIVE = '@sentry-internal/node-native-stacktrace';

let native = null; // the native capture, loaded once
let registered = false;

/**
 * The native capture's binary, loaded and the main thread registered with it; or why it cannot
 * be. The worker loads the binary itself (its package's index would load node-abi's tables there).
 * @returns {{ file: string } | { why: string }}
 */
function loadNative() {
  if (native) return native;
  try {
    const index = require.resolve(NATIVE);
    const m = require(index);
    const mod = require.cache[index];
    const binary = mod && mod.children.find((c) => c.id.endsWith('.node'));
    if (!registered) {
      m.registerThread();
      registered = true;
    }
    native = { file: binary ? binary.id : index };
  } catch (err) {
    const abi = process.versions.modules;
    return { why: `the native stack capture (${NATIVE}, an optional dependency) could not load for ${process.platform}-${process.arch} ABI ${abi}: ${String((err && /** @type {Error} */ (err).message) || err).split('\n')[0]}` };
  }
  return native;
}

/**
 * Why the capture cannot run here, or null when it can.
 * @returns {string | null}
 */
function unavailable() {
  if (process.platform !== 'linux') return `needs Linux (/proc), this is ${process.platform}`;
  if (!require('worker_threads').isMainThread) return 'not on the main thread (the agent runs in a worker)';
  if (typeof SharedArrayBuffer !== 'function') return 'no SharedArrayBuffer in this Node.js';
  return null;
}

module.exports = { unavailable, loadNative };
