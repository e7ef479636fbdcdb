// @ts-check
'use strict';

// node --require uvscope/register app.js  (or --import uvscope/register, or NODE_OPTIONS).
// In worker threads the preload does nothing: the main thread's agent owns the endpoint.
try {
  // lib/agent/loader.js: uvscope's files without Node's per-require resolution.
  if (isMainThread()) require('./lib/agent/loader').loadFromPackage(__dirname, 'lib/agent/start.js').preload();
} catch (err) {
  try {
    require('./lib/core/errors').reportError('register', err);
  } catch {
    // Never throw into the app.
  }
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
