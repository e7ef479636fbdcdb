'use strict';

// node --require uvscope/register app.js  (or --import uvscope/register, or NODE_OPTIONS).
// In worker threads the preload does nothing: the main thread's agent owns the endpoint.
try {
  if (require('worker_threads').isMainThread) require('./lib/index').start();
} catch (err) {
  try {
    require('./lib/report').reportError('register', err);
  } catch {
    // Never throw into the app.
  }
}
