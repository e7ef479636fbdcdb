'use strict';

// The holder's side: the pushes of the other processes of the app, taken from this machine only.

const { warnOnce, countError, reportError } = require('../../core/errors');
const { WARNINGS } = require('../../core/warnings');
const {
  PUSH_PATH, PUSH_HEADER, PROTOCOL_VERSION, MAX_BODY_BYTES, TTL_INTERVALS, MIN_TTL_MS,
  fromThisMachine, literalHost, parseMessage,
} = require('./protocol');

/**
 * Accepts pushes from this machine only, keeps each process's latest snapshot, drops a process
 * unheard of for its TTL, and holds at most maxProcesses.
 */
class Hub {
  /** @type {Map<number, any>} by pid */
  #members = new Map();
  #maxProcesses;
  #ttlMs;
  #enabled;
  #now;

  /** @param {{ maxProcesses: number, ttlMs?: number, enabled?: boolean, now?: () => number }} options */
  constructor({ maxProcesses, ttlMs, enabled = true, now = Date.now }) {
    this.#maxProcesses = maxProcesses;
    this.#ttlMs = ttlMs;
    this.#enabled = enabled;
    this.#now = now;
  }

  /**
   * Handle a request if it is a push (returns true), else leave it to the caller (returns false).
   * @param {import('http').IncomingMessage} req
   * @param {import('http').ServerResponse} res
   * @returns {boolean}
   */
  handle(req, res) {
    if ((req.url || '/').split('?')[0] !== PUSH_PATH) return false;
    try {
      this.#receive(req, res);
    } catch (err) {
      failed(res, err);
    }
    return true;
  }

  /** @returns {object[]} the other processes heard from within their TTL, by pid */
  others() {
    this.#prune(this.#now());
    return [...this.#members.values()].sort((a, b) => a.pid - b.pid);
  }

  #prune(t) {
    for (const [pid, m] of this.#members) if (t - m.receivedAt > m.ttlMs) this.#members.delete(pid);
  }

  #accept(msg, t) {
    if (msg.pid === process.pid) return 409;
    this.#prune(t);
    const known = this.#members.get(msg.pid);
    // Same pid, another process: separate PID namespaces (containers sharing a network).
    if (known && known.instance !== msg.instance) return 409;
    if (!known && this.#members.size >= this.#maxProcesses) return 429;
    this.#members.set(msg.pid, { ...msg, receivedAt: t, ttlMs: this.#ttlMs || Math.max(MIN_TTL_MS, TTL_INTERVALS * msg.intervalMs) });
    return 200;
  }

  /** Check the request, then read its body, at most MAX_BODY_BYTES. */
  #receive(req, res) {
    const reply = replier(res);
    req.on('error', () => {});
    if (req.method !== 'POST') {
      req.resume();
      res.writeHead(405, { Allow: 'POST' }).end();
      return;
    }
    if (!this.#enabled) {
      req.resume();
      reply(503, { error: 'this process does not serve other processes (UVSCOPE_MULTIPROCESS=false)' });
      return;
    }
    if (!fromThisMachine(req.socket) || !literalHost(req.headers.host) || req.headers[PUSH_HEADER] !== PROTOCOL_VERSION) {
      req.resume();
      reply(403, { error: 'uvscope accepts pushes from processes on this machine only' });
      return;
    }
    if (Number(req.headers['content-length']) > MAX_BODY_BYTES) {
      reply(413, { error: `at most ${MAX_BODY_BYTES} bytes` });
      req.destroy();
      return;
    }
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reply(413, { error: `at most ${MAX_BODY_BYTES} bytes` });
        req.destroy();
      } else {
        chunks.push(chunk);
      }
    });
    req.on('end', () => {
      try {
        if (size <= MAX_BODY_BYTES) this.#received(chunks, reply);
      } catch (err) {
        failed(res, err);
      }
    });
  }

  /** A whole body: keep the push if it is one, and answer. */
  #received(chunks, reply) {
    let msg;
    try {
      msg = parseMessage(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    } catch {
      msg = null;
    }
    if (!msg) {
      countError('multiprocess');
      reply(400, { error: 'not a uvscope push' });
      return;
    }
    const status = this.#accept(msg, this.#now());
    if (status === 429) warnOnce(WARNINGS.TOO_MANY_PROCESSES, `uvscope: this endpoint serves at most ${this.#maxProcesses} other processes; pid ${msg.pid} is left out (UVSCOPE_MULTIPROCESS_MAX_PROCESSES, 1 to 4096)`);
    reply(status, { holder: process.pid });
  }
}

/** The JSON answer to a push; the connection is kept for the next push only after a 200. */
function replier(res) {
  return (status, body) => {
    try {
      res.writeHead(status, { 'Content-Type': 'application/json', Connection: status === 200 ? 'keep-alive' : 'close' })
        .end(JSON.stringify({ uvscope: PROTOCOL_VERSION, ...body }));
    } catch {
      // The member went away: nothing to tell it.
    }
  };
}

// Inside the app's process: a failure here is counted and answered, never thrown.
function failed(res, err) {
  reportError('multiprocess', err);
  try {
    if (!res.headersSent) res.writeHead(500, { Connection: 'close' });
    res.end();
  } catch {
    // nothing more to do
  }
}

/**
 * The holder's side of the push protocol (see Hub).
 * @param {{ maxProcesses: number, ttlMs?: number, enabled?: boolean, now?: () => number }} options
 * @returns {Hub}
 */
function createHub(options) {
  return new Hub(options);
}

module.exports = { Hub, createHub };
