'use strict';

const diagnosticsChannel = require('diagnostics_channel');
const { reportError } = require('../../core/errors');
const { isOwnServer } = require('../../core/own-io');
const { subscribed: CHANNELS, safeSubscriber } = require('../../core/channels');

// Where its errors are counted and reported (lib/core/errors.js).
const COMPONENT = 'sampler:listen';
// Listening sockets kept as series (each one two gauges); later ones are counted in details only.
const MAX_LISTENERS = 16;
// A read of the queues cheaper than this (ms) is done at every sample; a dearer one only where
// it matters (#read), and at least every RECHECK_MS.
const CHEAP_MS = 0.25;
const RECHECK_MS = 10000;
const LATE_MS = 50;
// net.Server's backlog when listen() is given none (lib/net.js: this._handle.listen(backlog || 511)).
const DEFAULT_BACKLOG = 511;

/**
 * One listening socket the app owns.
 * @typedef {object} Listener
 * @property {string} address the listening address, or a Unix socket's path
 * @property {string} port '' for a Unix socket
 * @property {4|6|0} family 0 for a Unix socket
 * @property {number|null} inode its socket's inode (Linux), the key of its row in /proc/net/tcp
 * @property {number|null} backlog what the app asked for (null: Node's default)
 * @property {number|null} limit the backlog capped by somaxconn when it was seen (null: unknown)
 * @property {number|null} queue the accept queue at the last sample (null: not read)
 * @property {number} maxSeen the largest queue read at a sample since it was seen
 * @property {Readonly<Record<string, string>>} attributes
 */

/**
 * The app's listening sockets and the kernel's accept queue in front of each. Servers are known
 * from Node's listen tracing channel (Node 20.?+, 22: `{ server, options }`, so the backlog the app
 * asked for) and, where the count of server handles changes without it (a server that listened
 * before uvscope subscribed, a Node without the channel), from process._getActiveHandles(). At each
 * sample, only while the app listens on TCP: the LISTEN rows of /proc/net/tcp and tcp6 up to the
 * app's own (proc.js) and the namespace's TcpExt counters.
 * @param {{ handles?: () => object[], proc?: typeof import('./proc'), cheapMs?: number }} [options] handles:
 *   process._getActiveHandles by default; proc: the procfs readers (tests); cheapMs: CHEAP_MS by
 *   default (tests: Infinity reads at every sample, 0 only where it matters)
 */
function createListenSampler(options = {}) {
  return new ListenSampler(options);
}

class ListenSampler {
  name = 'listen';
  /** @type {WeakMap<object, number>} server -> the backlog its listen() asked for */
  #backlogs = new WeakMap();
  /** @type {Set<object>} servers seen listening, dropped once they are not */
  #servers = new Set();
  /** @type {Map<object, Listener>} */
  #listeners = new Map();
  #omitted = 0;
  #lastWraps = -1;
  /** @type {[string, Function][]} */
  #subscribed = [];
  #handles;
  #procModule;
  /** @type {any} */
  #proc = null; // { tcp, tcp6, netstat, somaxconn, netns, counters } once a TCP listener is seen
  #want4 = new Map();
  #want6 = new Map();
  #changes = 0; // listeners added or dropped so far
  #members = -1; // #changes when #want4/#want6 were made
  #counters = null;
  #countersRead = false;
  #lastAt = 0; // when the last sample was taken (performance.now())
  #gap = 0; // the usual time between samples (a moving average of those that were not late)
  #readAt = -Infinity; // when the queues were last read
  #cheap = true; // whether the last read of the queues took less than CHEAP_MS
  #reads = 0;
  #counterAttributes = null;
  #unavailable = null;

  #cheapMs;

  /** @param {{ handles?: () => object[], proc?: typeof import('./proc'), cheapMs?: number }} [options] */
  constructor({ handles, proc, cheapMs = CHEAP_MS } = {}) {
    this.#cheapMs = cheapMs;
    /** @type {any} */
    const p = process;
    this.#handles = handles || (typeof p._getActiveHandles === 'function' ? () => p._getActiveHandles() : null);
    this.#procModule = proc || null;
    const start = safeSubscriber(COMPONENT, ({ server, options: o }) => {
      if (server && o && typeof o.backlog === 'number') this.#backlogs.set(server, o.backlog);
    });
    const end = safeSubscriber(COMPONENT, ({ server }) => {
      if (server && !isOwnServer(server)) this.#servers.add(server);
    });
    /** @type {[string, (message: any, name: string | symbol) => void][]} */
    const pairs = [[CHANNELS.netServerListenStart, start], [CHANNELS.netServerListenEnd, end]];
    for (const [name, fn] of pairs) {
      diagnosticsChannel.subscribe(name, fn);
      this.#subscribed.push([name, fn]);
    }
  }

  /** @param {import('../index').Tick} [tick] */
  sample(tick) {
    const res = tick && tick.resources;
    const wraps = res ? (res.get('TCPServerWrap') || 0) + (res.get('PipeServerWrap') || 0) : 0;
    if (wraps !== this.#lastWraps) {
      this.#lastWraps = wraps;
      if (wraps > this.#servers.size) this.#rescan();
    }
    if (this.#servers.size === 0) return [];
    for (const server of this.#servers) {
      if (!server.listening || !server._handle) {
        this.#servers.delete(server);
        if (this.#listeners.delete(server)) this.#changes++;
      } else if (!this.#listeners.has(server)) this.#add(server);
    }
    const out = [];
    if (this.#listeners.size === 0) return out;
    const proc = this.#openProc();
    if (proc) this.#read(proc);
    for (const l of this.#listeners.values()) {
      if (l.queue === null) continue;
      out.push({ name: 'nodejs.net.server.accept_queue', attributes: l.attributes, value: l.queue });
      if (l.limit !== null) out.push({ name: 'nodejs.net.server.accept_queue.limit', attributes: l.attributes, value: l.limit });
    }
    if (this.#countersRead) {
      for (let k = 0; k < this.#counters.length; k++) {
        if (!Number.isNaN(this.#counters[k])) out.push({ name: 'system.network.tcp.listen.drops', attributes: this.#counterAttributes[k], value: this.#counters[k] });
      }
    }
    return out;
  }

  /**
   * The namespace's counters at every sample; the queues at every sample where that read is
   * cheap, else where it matters: when the drops rose, when this sample came late (the loop was
   * held: the queue it left is still there, timers run before libuv polls), when a listener came,
   * and every RECHECK_MS. The read is dear when the app's row is the last LISTEN row: the kernel
   * then looks for the next row through its whole established hash (2.5 ms at 262,144 buckets),
   * however few connections the namespace has.
   */
  #read(proc) {
    if (this.#members !== this.#changes) {
      this.#members = this.#changes;
      this.#want4.clear();
      this.#want6.clear();
      for (const l of this.#listeners.values()) if (l.inode !== null) (l.family === 6 ? this.#want6 : this.#want4).set(l.inode, -1);
      this.#readAt = -Infinity;
    }
    const tcp = this.#want4.size + this.#want6.size > 0;
    const before = this.#counters[0];
    this.#countersRead = tcp && proc.netstat !== null && proc.netstat.read(this.#counters);
    const rose = this.#countersRead && this.#counters[0] > before;
    const now = performance.now();
    const gap = now - this.#lastAt;
    // late: by half the usual gap and LATE_MS at least (a loop held that long leaves a queue)
    const late = this.#gap > 0 && gap > 1.5 * this.#gap && gap - this.#gap >= LATE_MS;
    if (this.#lastAt > 0 && !late) this.#gap = this.#gap > 0 ? 0.8 * this.#gap + 0.2 * gap : gap;
    this.#lastAt = now;
    if (!tcp || !(this.#cheap || rose || late || now - this.#readAt >= RECHECK_MS)) return;
    this.#readQueues(proc);
    const end = performance.now();
    this.#cheap = end - now < this.#cheapMs;
    this.#readAt = now;
    this.#reads++;
  }

  /** Servers listening now that the channel did not show (process._getActiveHandles()). */
  #rescan() {
    if (!this.#handles) return;
    const net = require('net');
    const handles = this.#handles();
    for (let i = 0; i < handles.length; i++) {
      const h = handles[i];
      if (h instanceof net.Server && h.listening && !isOwnServer(h)) this.#servers.add(h);
    }
  }

  /** @param {any} server a listening net.Server */
  #add(server) {
    if (this.#listeners.size >= MAX_LISTENERS) {
      this.#omitted++;
      this.#servers.delete(server);
      return;
    }
    const a = server.address();
    const pipe = typeof a === 'string' || a === null;
    const fd = server._handle && typeof server._handle.fd === 'number' && server._handle.fd >= 0 ? server._handle.fd : null;
    const proc = this.#openProc();
    const backlog = this.#backlogs.has(server) ? this.#backlogs.get(server) : null;
    const cap = proc ? proc.somaxconn : null;
    const asked = backlog === null ? DEFAULT_BACKLOG : backlog;
    /** @type {Listener} */
    const l = {
      address: pipe ? String(a || '') : a.address,
      port: pipe ? '' : String(a.port),
      family: pipe ? 0 : (a.family === 'IPv6' || a.family === 6 ? 6 : 4),
      inode: proc && fd !== null && !pipe ? proc.socketInode(fd) : null,
      backlog,
      // listen(2) caps the backlog at somaxconn (and a negative one at 0... Node passes 511 for 0)
      limit: cap === null ? null : Math.min(asked > 0 ? asked : DEFAULT_BACKLOG, cap),
      queue: null,
      maxSeen: 0,
      attributes: Object.freeze({ 'server.address': pipe ? String(a || '') : a.address, 'server.port': pipe ? '' : String(a.port) }),
    };
    this.#listeners.set(server, l);
    this.#changes++;
  }

  /** The procfs readers, opened at the first listener (null off Linux or without /proc). */
  #openProc() {
    if (this.#proc !== null || this.#unavailable !== null) return this.#proc;
    if (process.platform !== 'linux' && !this.#procModule) {
      this.#unavailable = `no accept-queue figures on ${process.platform} (Linux's /proc/net only)`;
      return null;
    }
    const p = this.#procModule || require('./proc');
    const tcp = p.openListenTable('/proc/net/tcp');
    const tcp6 = p.openListenTable('/proc/net/tcp6');
    if (!tcp && !tcp6) {
      this.#unavailable = '/proc/net/tcp and /proc/net/tcp6 cannot be read';
      return null;
    }
    const netstat = p.openNetstat();
    this.#counters = new Float64Array(p.NETSTAT_COUNTERS.length);
    this.#counterAttributes = p.NETSTAT_COUNTERS.map((c) => Object.freeze({ 'linux.netstat.counter': c }));
    this.#proc = { tcp, tcp6, netstat, somaxconn: p.readSomaxconn(), netns: p.netNamespace(), socketInode: p.socketInode, names: p.NETSTAT_COUNTERS };
    return this.#proc;
  }

  /** Each TCP listener's accept queue from the LISTEN rows. */
  #readQueues(proc) {
    readTable(proc.tcp, this.#want4);
    readTable(proc.tcp6, this.#want6);
    for (const l of this.#listeners.values()) {
      if (l.inode === null) continue;
      const q = (l.family === 6 ? this.#want6 : this.#want4).get(l.inode);
      l.queue = q === undefined || q < 0 ? null : q;
      if (l.queue !== null && l.queue > l.maxSeen) l.maxSeen = l.queue;
    }
  }

  /** @returns {object|null} snapshot.details.listen: each listener, the namespace's counters */
  details() {
    if (this.#listeners.size === 0 && this.#unavailable === null) return null;
    const proc = this.#proc;
    /** @type {Record<string, number>|null} */
    let counters = null;
    if (proc && this.#countersRead) {
      counters = {};
      for (let k = 0; k < proc.names.length; k++) if (!Number.isNaN(this.#counters[k])) counters[proc.names[k]] = this.#counters[k];
    }
    return {
      listeners: [...this.#listeners.values()].map((l) => ({
        address: l.address, port: l.port, family: l.family, backlog: l.backlog, limit: l.limit, queue: l.queue, maxSeen: l.maxSeen,
        // the backlog is seen when the server listens with uvscope subscribed, as an option
        limitFrom: l.backlog !== null ? 'listen() options' : 'Node\'s default backlog, assumed (the server\'s listen() was not seen, or its backlog was a positional argument)',
        // why a queue is absent
        ...(l.queue === null ? { why: l.family === 0 ? 'a Unix socket: the kernel gives its queue through sock_diag only' : l.inode === null ? 'no file descriptor of its own (a cluster worker\'s shared handle?)' : 'not in /proc/net/tcp' } : {}),
      })),
      omitted: this.#omitted,
      // the queues are read at every sample where cheap, else when it matters (sampler.js #read)
      queuesRead: { everySample: this.#cheap, reads: this.#reads, ageSeconds: this.#readAt === -Infinity ? null : (performance.now() - this.#readAt) / 1000 },
      somaxconn: proc ? proc.somaxconn : null,
      // the counters are the namespace's: every process in it (a container's pod) counts there
      netns: proc ? proc.netns : null,
      counters,
      unavailable: this.#unavailable,
    };
  }

  close() {
    for (const [name, fn] of this.#subscribed) {
      try {
        diagnosticsChannel.unsubscribe(name, /** @type {any} */ (fn));
      } catch (err) {
        reportError(COMPONENT, err);
      }
    }
    this.#subscribed = [];
    if (this.#proc) for (const r of [this.#proc.tcp, this.#proc.tcp6, this.#proc.netstat]) if (r) r.close();
    this.#servers.clear();
    this.#listeners.clear();
  }
}

/** The queues of the inodes `want` holds (-1 for each not found). */
function readTable(table, want) {
  if (want.size === 0) return;
  want.forEach(resetQueue);
  if (table) table.read(want, want.size);
}

function resetQueue(_, inode, map) {
  map.set(inode, -1);
}

module.exports = { createListenSampler, MAX_LISTENERS, DEFAULT_BACKLOG };
