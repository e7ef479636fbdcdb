// @ts-check
'use strict';

// node --require uvscope/register app.js  (or --import uvscope/register, or NODE_OPTIONS).
// In worker threads the preload does nothing: the main thread's agent owns the endpoint.
try {
  // lib/agent/loader.js: uvscope's files without Node's per-require resolution.
  if (isMainThread()) loader().loadFromPackage(__dirname, 'lib/agent/start.js').preload();
} catch (err) {
  try {
    require('./lib/core/errors').reportError('register', err);
  } catch {
    // Never throw into the app.
  }
}

// lib/agent/loader.js, compiled here as it compiles the others: Node's resolution of a relative
// require() normalizes its paths (path.resolve, realpath, the node_modules paths), and with the -r
// paths' own that work was enough for V8 to compile path's isPosixPathSeparator with Maglev on
// Node 24 and 26 (~2 MB of the compiler's pages in peak RSS, bench/startup.js) where an empty
// preload file did not. Where paths are not '/' separated, Node's loader does it.
function loader() {
  const Module = /** @type {any} */ (module.constructor);
  if (require('path').sep !== '/' || typeof Module !== 'function') return require('./lib/agent/loader');
  const filename = `${__dirname}/lib/agent/loader.js`;
  const cached = require.cache[filename];
  if (cached) return cached.exports;
  const mod = new Module(filename, module);
  mod.filename = filename;
  require.cache[filename] = mod;
  let done = false;
  try {
    mod._compile(require('fs').readFileSync(filename, 'utf8'), filename);
    done = true;
  } finally {
    if (!done) delete require.cache[filename];
  }
  mod.loaded = true;
  return mod.exports;
}

// Worker threads may not chdir: Node puts a stub marked `disabled` in place of process.chdir
// there (lib/internal/bootstrap/switches/does_not_own_process_state.js, Node 10 to 26). Reading
// it costs nothing, where loading worker_threads costs ~2 ms and 1.5 MB in the main thread
// (measured with bench/startup.js); test/register.test.js checks the answer on every Node major.
function isMainThread() {
  const chdir = /** @type {any} */ (process.chdir);
  if (typeof chdir === 'function' && (chdir.disabled === true || chdir.name === 'unavailableInWorker')) return false;
  return true;
}
