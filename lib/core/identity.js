'use strict';

// Which process this is, as the endpoint's labels and the exporters' attributes name it: its pid,
// and its node:cluster worker id when it is a cluster worker (PM2 cluster mode runs its instances
// as cluster workers too). Shared by the multi-process endpoint and the exporters.

const PID_ATTRIBUTE = 'process.pid';
const WORKER_ATTRIBUTE = 'nodejs.cluster.worker.id';

/**
 * This process as the holder's labels name it.
 * @returns {{ pid: number, workerId: string|undefined }}
 */
function processIdentity() {
  let workerId;
  try {
    // A cluster worker has node:cluster loaded before any preload or app code runs (Node sets the
    // worker up, and deletes NODE_UNIQUE_ID, before then): where it is not loaded this process is
    // no worker, and loading it to ask would cost a primary's cluster code (child_process and its
    // helpers, hundreds of KiB of V8's heap), kept for the process's life.
    const loaded = /** @type {any} */ (process).moduleLoadList;
    if (Array.isArray(loaded) && !loaded.includes('NativeModule cluster')) return { pid: process.pid, workerId };
    const cluster = /** @type {any} */ (require('cluster'));
    if (cluster.isWorker && cluster.worker) workerId = String(cluster.worker.id);
  } catch {
    // No cluster module (an embedder): no worker id.
  }
  return { pid: process.pid, workerId };
}

/**
 * The attributes that tell one process's series from another's.
 * @param {{ pid: number, workerId?: string }} identity
 * @returns {Record<string, string>}
 */
function processAttributes(identity) {
  const out = { [PID_ATTRIBUTE]: String(identity.pid) };
  if (identity.workerId !== undefined) out[WORKER_ATTRIBUTE] = identity.workerId;
  return out;
}

module.exports = { processIdentity, processAttributes, PID_ATTRIBUTE, WORKER_ATTRIBUTE };
