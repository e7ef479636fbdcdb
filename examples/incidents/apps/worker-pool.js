'use strict';
// The fix the crypto and starve apps apply: the same CPU-bound call, synchronously, in worker
// threads of their own (one per CPU the process may use), so it neither holds a libuv threadpool
// thread nor waits behind the app's lookups and file reads for one.
const os = require('os');
const { Worker } = require('worker_threads');

/**
 * Start the workers; the function returned posts a job to an idle worker (or queues it) and
 * resolves with what `work` returned for it.
 * @param {string} work the source of a function (job) => result, run in each worker
 * @returns {(job: object) => Promise<any>}
 */
function workerPool(work) {
  const code = `const { parentPort } = require('worker_threads');
    const work = ${work};
    parentPort.on('message', ({ id, job }) => parentPort.postMessage({ id, out: work(job) }));`;
  const count = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  const idle = [];
  const waiting = [];
  const callbacks = new Map();
  let nextId = 0;
  for (let i = 0; i < count; i++) {
    const w = new Worker(code, { eval: true });
    w.unref();
    w.on('message', ({ id, out }) => {
      callbacks.get(id)(out);
      callbacks.delete(id);
      const next = waiting.shift();
      if (next) w.postMessage(next);
      else idle.push(w);
    });
    idle.push(w);
  }
  return (job) => new Promise((resolve) => {
    const message = { id: nextId++, job };
    callbacks.set(message.id, resolve);
    const w = idle.pop();
    if (w) w.postMessage(message);
    else waiting.push(message);
  });
}

module.exports = { workerPool };
