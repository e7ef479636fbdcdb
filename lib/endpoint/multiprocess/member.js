'use strict';

// The member's side: a process that found the port held pushes its snapshots to the holder.

const { warnOnce, countError } = require('../../core/errors');
const { WARNINGS } = require('../../core/warnings');
const { createOwnAgent, withoutTracing } = require('../../core/own-io');
const { PUSH_PATH, PUSH_HEADER, PROTOCOL_VERSION, MAX_BODY_BYTES, processIdentity, safeCall } = require('./protocol');

/** How long a final push (beforeExit, stop()) may hold the process. */
const FINAL_PUSH_TIMEOUT_MS = 1000;
const MAX_BACKOFF_MS = 60000;
// A push failing with these means nobody listens on the port any more: try to take it over.
const GONE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE']);

/**
 * @typedef {object} MemberOptions
 * @property {string} host
 * @property {number} port
 * @property {number} intervalMs
 * @property {Function} [lookup] the unwrapped dns.lookup
 * @property {() => void} onGone nobody listens on the port any more
 * @property {string} [what] what the endpoint serves, for the warnings
 * @property {string} [portVar] the variable that sets the port, for the warnings
 */

/**
 * Pushes each snapshot to the holder (at most one push in flight, unref'd, bounded by a timeout),
 * calls onGone when nobody listens on the port any more. It says hello at once, so a port held by
 * something that is not uvscope is reported right away.
 */
class Member {
  #host;
  #port;
  #intervalMs;
  #onGone;
  #what;
  #portVar;
  #connectHost;
  #http = require('http');
  #agent;
  #instance = require('crypto').randomUUID(); // loaded only by a member: crypto costs MBs of RSS
  #timeoutMs;
  #identity = null;
  /** @type {Promise<void> | null} */
  #inFlight = null;
  #closed = false;
  #retryAt = 0;
  #backoffMs = 0;
  /** 'unknown' until the holder answers; 'joined' once it acknowledged; 'refused' otherwise */
  #state = 'unknown';
  /** @type {import('http').ClientRequest | null} */
  #current = null;
  #finalDeadline = 0;

  /** @param {MemberOptions} options */
  constructor({ host, port, intervalMs, lookup, onGone, what = 'the agent\'s endpoint', portVar = 'UVSCOPE_PROMETHEUS_PORT' }) {
    this.#host = host;
    this.#port = port;
    this.#intervalMs = intervalMs;
    this.#onGone = onGone;
    this.#what = what;
    this.#portVar = portVar;
    this.#connectHost = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
    this.#agent = createOwnAgent('http:', lookup, { maxSockets: 1 });
    this.#timeoutMs = Math.min(5000, Math.max(1000, intervalMs));
    this.push(null);
  }

  /** 'unknown', 'joined' or 'refused' */
  get state() {
    return this.#state;
  }

  /**
   * Push one snapshot. Never rejects; resolves when the push is done or abandoned.
   * @param {object|null} snapshot null: a hello with no figures yet
   * @param {{ final?: boolean }} [how] final: keep the process alive for it, at most 1 s
   * @returns {Promise<void>}
   */
  push(snapshot, { final = false } = {}) {
    if (this.#closed) return Promise.resolve();
    if (final && this.#state === 'refused') return Promise.resolve();
    if (final) {
      if (!this.#finalDeadline) this.#finalDeadline = Date.now() + FINAL_PUSH_TIMEOUT_MS;
      if (this.#inFlight) {
        // An unref'd push is under way: hold the process for it, then send the last snapshot.
        const current = this.#current;
        if (current) {
          if (current.socket) current.socket.ref();
          current.setTimeout(Math.max(1, this.#finalDeadline - Date.now()));
        }
        return this.#inFlight.then(() => (Date.now() < this.#finalDeadline ? this.push(snapshot, { final }) : undefined));
      }
    } else if (this.#inFlight || Date.now() < this.#retryAt) {
      return this.#inFlight || Promise.resolve();
    }
    this.#inFlight = this.#send(snapshot || { time: Date.now(), points: [], findings: [] }, final, true).then(() => {
      this.#inFlight = null;
      this.#current = null;
    });
    return this.#inFlight;
  }

  close() {
    this.#closed = true;
    this.#agent.destroy();
  }

  #backoff(t) {
    this.#backoffMs = Math.min(MAX_BACKOFF_MS, this.#backoffMs ? this.#backoffMs * 2 : this.#intervalMs);
    this.#retryAt = t + this.#backoffMs;
  }

  /** The holder said no (an HTTP status) or could not be understood (why, in words): one warning. */
  #refused(status, t) {
    if (this.#state !== 'joined') this.#state = 'refused';
    this.#backoff(t);
    countError('multiprocess');
    const where = `${this.#host}:${this.#port}`;
    const own = `give this process its own ${this.#portVar}`;
    if (status === 503) warnOnce(WARNINGS.LISTEN_FAILED, `uvscope: cannot serve ${this.#what} on ${where} (EADDRINUSE): the process holding it does not serve other processes (UVSCOPE_MULTIPROCESS=false there); ${own}. The app goes on without this endpoint.`);
    else if (status === 409) warnOnce(WARNINGS.PROCESS_CONFLICT, `uvscope: the process holding ${where} already serves another process with pid ${process.pid} (separate PID namespaces?); ${own}`);
    else if (status === 413) warnOnce(WARNINGS.PUSH_TOO_LARGE, `uvscope: this process's figures exceed ${MAX_BODY_BYTES} bytes and are not served at ${where}; lower UVSCOPE_DNS_MAX_NAMES or ${own}`);
    else if (status === 429) warnOnce(WARNINGS.TOO_MANY_PROCESSES, `uvscope: the process holding ${where} serves its maximum of processes; raise UVSCOPE_MULTIPROCESS_MAX_PROCESSES there or ${own}`);
    else warnOnce(WARNINGS.LISTEN_FAILED, `uvscope: cannot serve ${this.#what} on ${where} (EADDRINUSE): the port is in use by something that is not uvscope (${status}); set ${this.#portVar} to a free port (0 picks one). The app goes on without this endpoint.`);
  }

  /** One POST to the holder; resolves when it is answered or has failed. */
  #send(snapshot, final, mayRetry) {
    return new Promise((resolve) => {
      try {
        if (!this.#identity) this.#identity = processIdentity();
        const body = JSON.stringify({
          v: PROTOCOL_VERSION, pid: this.#identity.pid, workerId: this.#identity.workerId, instance: this.#instance,
          intervalMs: this.#intervalMs, time: snapshot.time, points: snapshot.points, findings: snapshot.findings || [],
        });
        if (Buffer.byteLength(body) > MAX_BODY_BYTES) {
          this.#refused(413, Date.now());
          resolve();
          return;
        }
        // Without tracing: a push is uvscope's own request, never a span in the app's traces.
        const req = withoutTracing(() => this.#http.request({
          host: this.#connectHost, port: this.#port, path: PUSH_PATH, method: 'POST', agent: this.#agent,
          timeout: final ? Math.max(1, this.#finalDeadline - Date.now()) : this.#timeoutMs,
          headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), [PUSH_HEADER]: PROTOCOL_VERSION },
        }));
        this.#current = req;
        this.#watch(req, resolve, () => this.#send(snapshot, final, false), final, mayRetry);
        req.end(body);
      } catch {
        countError('multiprocess');
        resolve();
      }
    });
  }

  /** Settle a push once: on its answer, its error or its timeout. */
  #watch(req, resolve, retry, final, mayRetry) {
    let settled = false;
    const done = () => {
      if (settled) return false;
      settled = true;
      return true;
    };
    req.on('socket', (socket) => {
      if (!this.#finalDeadline) socket.unref();
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('push timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', (err) => {
      if (!done()) return;
      // The holder closed an idle kept-alive connection as we reused it: once more, anew.
      if (mayRetry && err.code === 'ECONNRESET' && req.reusedSocket) {
        resolve(retry());
        return;
      }
      resolve();
      this.#failed(err, final);
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        if (text.length < 1024) text += d;
      });
      res.on('error', () => {
        if (done()) resolve();
      });
      res.on('end', () => {
        if (!done()) return;
        resolve();
        this.#answered(res.statusCode, text);
      });
    });
  }

  #failed(err, final) {
    if (GONE.has(err.code)) {
      if (this.#state === 'joined') this.#state = 'unknown';
      safeCall(this.#onGone);
    } else if (this.#state === 'joined') {
      countError('multiprocess'); // a busy holder: the next push carries the same totals
    } else {
      this.#refused(`no answer within ${final ? FINAL_PUSH_TIMEOUT_MS : this.#timeoutMs} ms`, Date.now());
    }
  }

  #answered(statusCode, text) {
    let ack;
    try {
      ack = JSON.parse(text);
    } catch {
      ack = null;
    }
    if (statusCode === 200 && ack && ack.uvscope === PROTOCOL_VERSION) {
      this.#state = 'joined';
      this.#backoffMs = 0;
      this.#retryAt = 0;
    } else {
      this.#refused(ack && ack.uvscope ? statusCode : `it answered HTTP ${statusCode}`, Date.now());
    }
  }
}

/**
 * The member's side of the push protocol (see Member); it says hello at once.
 * @param {MemberOptions} options
 * @returns {Member}
 */
function createMember(options) {
  return new Member(options);
}

module.exports = { Member, createMember, FINAL_PUSH_TIMEOUT_MS };
