'use strict';

// Several processes of one app (node:cluster, PM2 cluster mode, children that inherit
// NODE_OPTIONS) run the agent with the same metrics port. The process that binds the port (the
// holder) also serves the others' figures; a process that finds the port taken (a member) pushes
// its snapshot to the holder over loopback after every sample, and takes the port over when the
// holder is gone.
//
// prom-client's AggregatorRegistry is the model users know: the cluster primary asks its workers
// over IPC at scrape time and sums. IPC exists only between a cluster primary and its workers, so
// it covers neither PM2's sibling processes nor NODE_OPTIONS children; and a sum hides which
// process is in trouble and turns a dead worker into a counter reset. Here every process keeps its
// own series, told apart by a pid label (and worker_id for cluster workers); PromQL sums them.
//
// Here: protocol.js (the wire format, limits and labels), hub.js (the holder's side), member.js
// (the member's side), and this file, which decides the role and hands the port over.

// hub.js loads at the first push a holder receives (most apps are one process, which never gets
// one); member.js when this process joins as a member (another process holds the port).
const {
  PUSH_PATH, PUSH_HEADER, MAX_BODY_BYTES, TTL_INTERVALS, PID_ATTRIBUTE, WORKER_ATTRIBUTE,
  processIdentity, processAttributes, safeCall,
} = require('./protocol');
const { reportError } = require('../../core/errors');

/**
 * A node:cluster worker leaves the port to its primary this long: it starts as a member, and binds
 * only if nobody holds the port by then. Without it the first process to bind wins, and a worker
 * (forked during the primary's startup) sometimes beat the primary that forked it: the port then
 * changed hands with every worker restart.
 */
const WORKER_GRACE_MS = 1000;

/**
 * @typedef {object} MultiprocessOptions
 * @property {string} host
 * @property {number} port
 * @property {number} intervalMs
 * @property {boolean} aggregate
 * @property {number} maxProcesses
 * @property {number} [ttlMs]
 * @property {Function} [lookup]
 * @property {() => Promise<Error|null>} listen bind a fresh server (null, or the error)
 * @property {(err: Error) => void} onListenFailed
 * @property {string} [what]
 * @property {string} [portVar]
 */

/**
 * Serve one endpoint for every process of an app that shares the port. `listen()` binds a fresh
 * server (resolving null, or the error); the first process to bind holds the port and serves the
 * others' figures (handle() takes their pushes); a process that gets EADDRINUSE pushes to it
 * (export()), and tries to bind again when nobody answers there any more, so another process takes
 * over within about one sampling interval of the holder's exit.
 */
class Multiprocess {
  #options;
  /** @type {import('./hub').Hub | null} made at the first push (hub.js loads then) */
  #hub = null;
  /** @type {'starting'|'holder'|'member'|'none'} */
  #role = 'starting';
  /** @type {import('./member').Member | null} */
  #member = null;
  #closed = false;
  /** @type {Promise<void> | null} */
  #takingOver = null;
  #finalizing = false;
  /** @type {NodeJS.Timeout | null} */
  #graceTimer = null;
  #graceEnd = 0;
  #bindFailureTold = false;

  /** @param {MultiprocessOptions} options */
  constructor(options) {
    this.#options = options;
  }

  /**
   * Bind or join. Resolves 'holder', 'member' or 'none'; never rejects.
   * @returns {Promise<string>}
   */
  async start() {
    const { aggregate, port } = this.#options;
    if (aggregate && port !== 0 && processIdentity().workerId !== undefined) {
      // A cluster worker: join whoever holds the port; bind only after the grace (#onGone).
      this.#graceEnd = Date.now() + WORKER_GRACE_MS;
      this.#join();
      return this.#role;
    }
    const err = await this.#bind();
    if (this.#closed) return 'none';
    if (!err) {
      this.#role = 'holder';
    } else if (aggregate && port !== 0 && /** @type {NodeJS.ErrnoException} */ (err).code === 'EADDRINUSE') {
      this.#join();
    } else {
      this.#role = 'none';
      safeCall(() => this.#options.onListenFailed(err));
    }
    return this.#role;
  }

  /** 'starting', 'holder', 'member' or 'none' */
  get role() {
    return this.#role;
  }

  /** A member's standing with the holder: 'unknown', 'joined' or 'refused' (null when not a member). */
  get memberState() {
    return this.#member ? this.#member.state : null;
  }

  /**
   * Holder: take a push if the request is one (true), else false.
   * @param {import('http').IncomingMessage} req
   * @param {import('http').ServerResponse} res
   */
  handle(req, res) {
    if ((req.url || '/').split('?')[0] !== PUSH_PATH) return false;
    if (this.#hub === null) {
      const { maxProcesses, ttlMs, aggregate } = this.#options;
      try {
        this.#hub = createHub({ maxProcesses, ttlMs, enabled: aggregate });
      } catch (err) {
        // As hub.js answers its own failures: counted and answered, never thrown into the app.
        reportError('multiprocess', err);
        if (!res.headersSent) res.writeHead(500, { Connection: 'close' });
        res.end();
        return true;
      }
    }
    return this.#hub.handle(req, res);
  }

  /**
   * Every process's snapshot with the attributes that tell them apart: none while this process
   * is alone, pid (and worker id) on each, this one's included, once others push to it.
   * @param {object|null} own this process's latest snapshot
   * @returns {{ attributes: Record<string, string>, snapshot: object }[]}
   */
  sources(own) {
    const others = this.#role === 'holder' && this.#options.aggregate && this.#hub ? this.#hub.others() : [];
    if (others.length === 0) return own ? [{ attributes: {}, snapshot: own }] : [];
    const out = own ? [{ attributes: processAttributes(processIdentity()), snapshot: own }] : [];
    for (const m of others) out.push({ attributes: processAttributes(m), snapshot: m });
    return out;
  }

  /** @returns {{ pid: number, workerId?: string, time: number, intervalMs: number, points: object[], findings: object[] }[]} */
  others() {
    if (this.#role !== 'holder' || !this.#options.aggregate || !this.#hub) return [];
    return this.#hub.others().map(({ pid, workerId, time, intervalMs, points, findings }) => ({ pid, workerId, time, intervalMs, points, findings }));
  }

  /**
   * Member: push the snapshot to the holder (a push exporter's export()).
   * @param {object} snapshot
   */
  export(snapshot) {
    if (this.#member) this.#member.push(snapshot, { final: this.#finalizing });
  }

  /**
   * Member: the process is about to end: push this last snapshot, holding the process for at
   * most 1 s. sample() is called with final pushes on, so a push it triggers waits for its answer.
   * @param {() => object} sample
   */
  async finalPush(sample) {
    if (!this.#member) return;
    this.#finalizing = true;
    try {
      const snapshot = sample();
      if (this.#member) await this.#member.push(snapshot, { final: true });
    } finally {
      this.#finalizing = false;
    }
  }

  close() {
    this.#closed = true;
    if (this.#graceTimer) clearTimeout(this.#graceTimer);
    this.#graceTimer = null;
    if (this.#member) this.#member.close();
    this.#member = null;
  }

  #join() {
    const { host, port, intervalMs, lookup, what, portVar } = this.#options;
    this.#role = 'member';
    const { Member } = require('./member');
    this.#member = new Member({ host, port, intervalMs, lookup, onGone: () => this.#onGone(), what, portVar });
  }

  async #bind() {
    try {
      return await this.#options.listen();
    } catch (err) {
      return err;
    }
  }

  async #takeOver() {
    if (this.#takingOver || this.#closed) return;
    this.#takingOver = this.#bind().then((err) => {
      this.#takingOver = null;
      if (this.#closed) return;
      // EADDRINUSE: another process took the port first; the next push goes to it. Any other
      // cause (a cluster worker's first bind: a bad host) is told once, as start() tells it.
      if (err && err.code !== 'EADDRINUSE' && !this.#bindFailureTold) {
        this.#bindFailureTold = true;
        safeCall(() => this.#options.onListenFailed(err));
      }
      if (err) return;
      this.#role = 'holder';
      if (this.#member) this.#member.close();
      this.#member = null;
    });
  }

  /** A member's holder is gone: take the port over, after a cluster worker's grace (see WORKER_GRACE_MS). */
  #onGone() {
    const wait = this.#graceEnd - Date.now();
    if (wait <= 0) {
      this.#takeOver();
    } else if (!this.#graceTimer) {
      this.#graceTimer = setTimeout(() => {
        this.#graceTimer = null;
        this.#takeOver();
      }, wait);
      this.#graceTimer.unref();
    }
  }
}

/**
 * One endpoint for every process of an app that shares the port (see Multiprocess).
 * @param {MultiprocessOptions} options
 * @returns {Multiprocess}
 */
function createMultiprocess(options) {
  return new Multiprocess(options);
}

/**
 * A holder's side alone (hub.js).
 * @param {ConstructorParameters<typeof import('./hub').Hub>[0]} options
 * @returns {import('./hub').Hub}
 */
function createHub(options) {
  return require('./hub').createHub(options);
}

/**
 * A member's side alone (member.js).
 * @param {ConstructorParameters<typeof import('./member').Member>[0]} options
 * @returns {import('./member').Member}
 */
function createMember(options) {
  return require('./member').createMember(options);
}

module.exports = {
  Multiprocess, createMultiprocess, createHub, createMember, processIdentity, processAttributes,
  PUSH_PATH, PUSH_HEADER, MAX_BODY_BYTES, TTL_INTERVALS, PID_ATTRIBUTE, WORKER_ATTRIBUTE,
};
