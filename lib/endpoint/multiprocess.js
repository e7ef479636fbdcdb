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

const crypto = require('crypto');
const net = require('net');
const { CATALOG } = require('../snapshot/catalog');
const { warnOnce, countError, reportError } = require('../core/errors');
const { WARNINGS } = require('../core/warnings');
const { createOwnAgent } = require('../core/own-io');
const { processIdentity, processAttributes, PID_ATTRIBUTE, WORKER_ATTRIBUTE } = require('../core/identity');

const PUSH_PATH = '/uvscope/v1/push';
// A header a browser cannot send cross-origin without a CORS preflight, which is never answered.
const PUSH_HEADER = 'x-uvscope-push';
const PROTOCOL_VERSION = '1';
/** Largest snapshot a member may push (about 40x a process with 100 hostnames). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** A member unheard of for this many of its sampling intervals is dropped (unless a TTL is set). */
const TTL_INTERVALS = 3;
const MIN_TTL_MS = 1000;
/** How long a final push (beforeExit, stop()) may hold the process. */
const FINAL_PUSH_TIMEOUT_MS = 1000;
const MAX_BACKOFF_MS = 60000;
/**
 * A node:cluster worker leaves the port to its primary this long: it starts as a member, and binds
 * only if nobody holds the port by then. Without it the first process to bind wins, and a worker
 * (forked during the primary's startup) sometimes beat the primary that forked it: the port then
 * changed hands with every worker restart.
 */
const WORKER_GRACE_MS = 1000;
// A push failing with these means nobody listens on the port any more: try to take it over.
const GONE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE']);

const CATALOG_ATTRIBUTES = new Map(CATALOG.map((m) => [m.name, new Set(m.attributes)]));

/**
 * The holder's side: accepts pushes from this machine only, keeps each process's latest snapshot,
 * drops a process unheard of for its TTL, and holds at most maxProcesses.
 * @param {{ maxProcesses: number, ttlMs?: number, now?: () => number }} options
 */
function createHub({ maxProcesses, ttlMs, enabled = true, now = Date.now }) {
  /** @type {Map<number, object>} by pid */
  const members = new Map();

  function prune(t) {
    for (const [pid, m] of members) if (t - m.receivedAt > m.ttlMs) members.delete(pid);
  }

  function accept(msg, t) {
    if (msg.pid === process.pid) return 409;
    prune(t);
    const known = members.get(msg.pid);
    // Same pid, another process: separate PID namespaces (containers sharing a network).
    if (known && known.instance !== msg.instance) return 409;
    if (!known && members.size >= maxProcesses) return 429;
    members.set(msg.pid, { ...msg, receivedAt: t, ttlMs: ttlMs || Math.max(MIN_TTL_MS, TTL_INTERVALS * msg.intervalMs) });
    return 200;
  }

  /**
   * Handle a request if it is a push (returns true), else leave it to the caller (returns false).
   * @param {import('http').IncomingMessage} req
   * @param {import('http').ServerResponse} res
   */
  function handle(req, res) {
    if ((req.url || '/').split('?')[0] !== PUSH_PATH) return false;
    try {
      receive(req, res);
    } catch (err) {
      failed(res, err);
    }
    return true;
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

  function receive(req, res) {
    const reply = (status, body) => {
      try {
        res.writeHead(status, { 'Content-Type': 'application/json', Connection: status === 200 ? 'keep-alive' : 'close' })
          .end(JSON.stringify({ uvscope: PROTOCOL_VERSION, ...body }));
      } catch {
        // The member went away: nothing to tell it.
      }
    };
    req.on('error', () => {});
    if (req.method !== 'POST') {
      req.resume();
      res.writeHead(405, { Allow: 'POST' }).end();
      return;
    }
    if (!enabled) {
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
        end();
      } catch (err) {
        failed(res, err);
      }
    });
    const end = () => {
      if (size > MAX_BODY_BYTES) return;
      let msg = null;
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
      const status = accept(msg, now());
      if (status === 429) warnOnce(WARNINGS.TOO_MANY_PROCESSES, `uvscope: this endpoint serves at most ${maxProcesses} other processes; pid ${msg.pid} is left out (UVSCOPE_MULTIPROCESS_MAX_PROCESSES, 1 to 4096)`);
      reply(status, { holder: process.pid });
    };
  }

  return {
    handle,
    /** @returns {object[]} the other processes heard from within their TTL, by pid */
    others() {
      prune(now());
      return [...members.values()].sort((a, b) => a.pid - b.pid);
    },
  };
}

/**
 * The member's side: pushes each snapshot to the holder (at most one push in flight, unref'd,
 * bounded by a timeout), calls onGone when nobody listens on the port any more. It says hello at
 * once, so a port held by something that is not uvscope is reported right away.
 * @param {{ host: string, port: number, intervalMs: number, lookup?: Function, onGone: () => void }} options
 */
function createMember({ host, port, intervalMs, lookup, onGone, what = 'the agent\'s endpoint', portVar = 'UVSCOPE_PROMETHEUS_PORT' }) {
  const connectHost = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  const http = require('http');
  const agent = createOwnAgent('http:', lookup, { maxSockets: 1 });
  const instance = crypto.randomUUID();
  const timeoutMs = Math.min(5000, Math.max(1000, intervalMs));
  let identity = null;
  let inFlight = null;
  let closed = false;
  let retryAt = 0;
  let backoffMs = 0;
  /** 'unknown' until the holder answers; 'joined' once it acknowledged; 'refused' otherwise */
  let state = 'unknown';
  let current = null;
  let finalDeadline = 0;

  function backoff(t) {
    backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs ? backoffMs * 2 : intervalMs);
    retryAt = t + backoffMs;
  }

  function refused(status, t) {
    if (state !== 'joined') state = 'refused';
    backoff(t);
    countError('multiprocess');
    const where = `${host}:${port}`;
    const own = `give this process its own ${portVar}`;
    if (status === 503) warnOnce(WARNINGS.LISTEN_FAILED, `uvscope: cannot serve ${what} on ${where} (EADDRINUSE): the process holding it does not serve other processes (UVSCOPE_MULTIPROCESS=false there); ${own}. The app goes on without this endpoint.`);
    else if (status === 409) warnOnce(WARNINGS.PROCESS_CONFLICT, `uvscope: the process holding ${where} already serves another process with pid ${process.pid} (separate PID namespaces?); ${own}`);
    else if (status === 413) warnOnce(WARNINGS.PUSH_TOO_LARGE, `uvscope: this process's figures exceed ${MAX_BODY_BYTES} bytes and are not served at ${where}; lower UVSCOPE_DNS_MAX_NAMES or ${own}`);
    else if (status === 429) warnOnce(WARNINGS.TOO_MANY_PROCESSES, `uvscope: the process holding ${where} serves its maximum of processes; raise UVSCOPE_MULTIPROCESS_MAX_PROCESSES there or ${own}`);
    else notUvscope(status);
  }

  function notUvscope(why) {
    warnOnce(WARNINGS.LISTEN_FAILED, `uvscope: cannot serve ${what} on ${host}:${port} (EADDRINUSE): the port is in use by something that is not uvscope (${why}); set ${portVar} to a free port (0 picks one). The app goes on without this endpoint.`);
  }

  /**
   * Push one snapshot. Never rejects; resolves when the push is done or abandoned.
   * @param {object|null} snapshot null: a hello with no figures yet
   * @param {{ final?: boolean }} [how] final: keep the process alive for it, at most 1 s
   */
  function push(snapshot, { final = false } = {}) {
    if (closed) return Promise.resolve();
    if (final && state === 'refused') return Promise.resolve();
    if (final) {
      if (!finalDeadline) finalDeadline = Date.now() + FINAL_PUSH_TIMEOUT_MS;
      if (inFlight) {
        // An unref'd push is under way: hold the process for it, then send the last snapshot.
        if (current) {
          if (current.socket) current.socket.ref();
          current.setTimeout(Math.max(1, finalDeadline - Date.now()));
        }
        return inFlight.then(() => (Date.now() < finalDeadline ? push(snapshot, { final }) : undefined));
      }
    } else if (inFlight || Date.now() < retryAt) {
      return inFlight || Promise.resolve();
    }
    inFlight = send(snapshot || { time: Date.now(), points: [], findings: [] }, final, true).then(() => {
      inFlight = null;
      current = null;
    });
    return inFlight;
  }

  function send(snapshot, final, mayRetry) {
    return new Promise((resolve) => {
      try {
        if (!identity) identity = processIdentity();
        const body = JSON.stringify({
          v: PROTOCOL_VERSION, pid: identity.pid, workerId: identity.workerId, instance,
          intervalMs, time: snapshot.time, points: snapshot.points, findings: snapshot.findings || [],
        });
        if (Buffer.byteLength(body) > MAX_BODY_BYTES) {
          refused(413, Date.now());
          resolve();
          return;
        }
        const req = http.request({
          host: connectHost, port, path: PUSH_PATH, method: 'POST', agent,
          timeout: final ? Math.max(1, finalDeadline - Date.now()) : timeoutMs,
          headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), [PUSH_HEADER]: PROTOCOL_VERSION },
        });
        current = req;
        let settled = false;
        const done = () => {
          if (settled) return false;
          settled = true;
          return true;
        };
        req.on('socket', (socket) => {
          if (!finalDeadline) socket.unref();
        });
        req.on('timeout', () => req.destroy(Object.assign(new Error('push timed out'), { code: 'ETIMEDOUT' })));
        req.on('error', (err) => {
          if (!done()) return;
          // The holder closed an idle kept-alive connection as we reused it: once more, anew.
          if (mayRetry && err.code === 'ECONNRESET' && req.reusedSocket) {
            resolve(send(snapshot, final, false));
            return;
          }
          resolve();
          if (GONE.has(err.code)) {
            if (state === 'joined') state = 'unknown';
            safeCall(onGone);
          } else if (state === 'joined') {
            countError('multiprocess'); // a busy holder: the next push carries the same totals
          } else {
            refused(`no answer within ${final ? FINAL_PUSH_TIMEOUT_MS : timeoutMs} ms`, Date.now());
          }
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
            let ack = null;
            try {
              ack = JSON.parse(text);
            } catch {
              ack = null;
            }
            if (res.statusCode === 200 && ack && ack.uvscope === PROTOCOL_VERSION) {
              state = 'joined';
              backoffMs = 0;
              retryAt = 0;
            } else {
              refused(ack && ack.uvscope ? res.statusCode : `it answered HTTP ${res.statusCode}`, Date.now());
            }
          });
        });
        req.end(body);
      } catch {
        countError('multiprocess');
        resolve();
      }
    });
  }

  push(null);

  return {
    push,
    /** 'unknown', 'joined' or 'refused' */
    get state() {
      return state;
    },
    close() {
      closed = true;
      agent.destroy();
    },
  };
}

/**
 * Serve one endpoint for every process of an app that shares the port. `listen()` binds a fresh
 * server (resolving null, or the error); the first process to bind holds the port and serves the
 * others' figures (handle() takes their pushes); a process that gets EADDRINUSE pushes to it
 * (export()), and tries to bind again when nobody answers there any more, so another process takes
 * over within about one sampling interval of the holder's exit.
 * @param {{ host: string, port: number, intervalMs: number, aggregate: boolean, maxProcesses: number,
 *   ttlMs?: number, lookup?: Function, listen: () => Promise<Error|null>, onListenFailed: (err: Error) => void }} options
 */
function createMultiprocess({ host, port, intervalMs, aggregate, maxProcesses, ttlMs, lookup, listen, onListenFailed, what, portVar }) {
  const hub = createHub({ maxProcesses, ttlMs, enabled: aggregate });
  let role = 'starting';
  let member = null;
  let closed = false;
  let takingOver = null;
  let finalizing = false;
  let graceTimer = null;
  let graceEnd = 0;
  let bindFailureTold = false;

  async function bind() {
    try {
      return await listen();
    } catch (err) {
      return err;
    }
  }

  async function takeOver() {
    if (takingOver || closed) return;
    takingOver = bind().then((err) => {
      takingOver = null;
      if (closed) return;
      // EADDRINUSE: another process took the port first; the next push goes to it. Any other
      // cause (a cluster worker's first bind: a bad host) is told once, as start() tells it.
      if (err && err.code !== 'EADDRINUSE' && !bindFailureTold) {
        bindFailureTold = true;
        safeCall(() => onListenFailed(err));
      }
      if (err) return;
      role = 'holder';
      if (member) member.close();
      member = null;
    });
  }

  /** A member's holder is gone: take the port over, after a cluster worker's grace (see WORKER_GRACE_MS). */
  function onGone() {
    const wait = graceEnd - Date.now();
    if (wait <= 0) {
      takeOver();
    } else if (!graceTimer) {
      graceTimer = setTimeout(() => {
        graceTimer = null;
        takeOver();
      }, wait);
      graceTimer.unref();
    }
  }

  return {
    /** Bind or join. Resolves 'holder', 'member' or 'none'; never rejects. */
    async start() {
      if (aggregate && port !== 0 && processIdentity().workerId !== undefined) {
        // A cluster worker: join whoever holds the port; bind only after the grace (onGone).
        graceEnd = Date.now() + WORKER_GRACE_MS;
        role = 'member';
        member = createMember({ host, port, intervalMs, lookup, onGone, what, portVar });
        return role;
      }
      const err = await bind();
      if (closed) return 'none';
      if (!err) {
        role = 'holder';
      } else if (aggregate && port !== 0 && err.code === 'EADDRINUSE') {
        role = 'member';
        member = createMember({ host, port, intervalMs, lookup, onGone, what, portVar });
      } else {
        role = 'none';
        safeCall(() => onListenFailed(err));
      }
      return role;
    },
    /** 'starting', 'holder', 'member' or 'none' */
    get role() {
      return role;
    },
    /** A member's standing with the holder: 'unknown', 'joined' or 'refused' (null when not a member). */
    get memberState() {
      return member ? member.state : null;
    },
    /** Holder: take a push if the request is one (true), else false. */
    handle(req, res) {
      return hub.handle(req, res);
    },
    /**
     * Every process's snapshot with the attributes that tell them apart: none while this process
     * is alone, pid (and worker id) on each, this one's included, once others push to it.
     * @param {object|null} own this process's latest snapshot
     * @returns {{ attributes: Record<string, string>, snapshot: object }[]}
     */
    sources(own) {
      const others = role === 'holder' && aggregate ? hub.others() : [];
      if (others.length === 0) return own ? [{ attributes: {}, snapshot: own }] : [];
      const out = own ? [{ attributes: processAttributes(processIdentity()), snapshot: own }] : [];
      for (const m of others) out.push({ attributes: processAttributes(m), snapshot: m });
      return out;
    },
    /** @returns {{ pid: number, workerId?: string, time: number, intervalMs: number, points: object[], findings: object[] }[]} */
    others() {
      if (role !== 'holder' || !aggregate) return [];
      return hub.others().map(({ pid, workerId, time, intervalMs, points, findings }) => ({ pid, workerId, time, intervalMs, points, findings }));
    },
    /** Member: push the snapshot to the holder (a push exporter's export()). */
    export(snapshot) {
      if (member) member.push(snapshot, { final: finalizing });
    },
    /**
     * Member: the process is about to end: push this last snapshot, holding the process for at
     * most 1 s. sample() is called with final pushes on, so a push it triggers waits for its answer.
     * @param {() => object} sample
     */
    async finalPush(sample) {
      if (!member) return;
      finalizing = true;
      try {
        const snapshot = sample();
        if (member) await member.push(snapshot, { final: true });
      } finally {
        finalizing = false;
      }
    },
    close() {
      closed = true;
      if (graceTimer) clearTimeout(graceTimer);
      graceTimer = null;
      if (member) member.close();
      member = null;
    },
  };
}

/** Whether a connection comes from this machine: loopback, or to and from the same address. */
function fromThisMachine(socket) {
  const strip = (a) => String(a || '').replace(/^::ffff:/, '');
  const remote = strip(socket && socket.remoteAddress);
  if (remote === '::1' || /^127\./.test(remote)) return true;
  return remote !== '' && remote === strip(socket && socket.localAddress);
}

// A page on a rebound DNS name would send its own name as Host; members send the address.
function literalHost(header) {
  if (typeof header !== 'string') return false;
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(header) || /^([^:]+)(?::\d+)?$/.exec(header);
  return Boolean(m) && (m[1] === 'localhost' || net.isIP(m[1]) !== 0);
}

/** A push as the holder keeps it, or null when it is not one. Points it does not know are left out. */
function parseMessage(msg) {
  if (!msg || typeof msg !== 'object' || msg.v !== PROTOCOL_VERSION) return null;
  const { pid, workerId, instance, intervalMs, time, points, findings } = msg;
  if (!Number.isInteger(pid) || pid <= 0) return null;
  if (workerId !== undefined && (typeof workerId !== 'string' || !/^[\w.-]{1,32}$/.test(workerId))) return null;
  if (typeof instance !== 'string' || instance.length > 64) return null;
  if (!Number.isInteger(intervalMs) || intervalMs < 50 || intervalMs > 3600000) return null;
  if (!Number.isFinite(time) || !Array.isArray(points)) return null;
  const kept = [];
  for (const p of points) {
    const point = parsePoint(p);
    if (point) kept.push(point);
  }
  const kf = Array.isArray(findings) ? findings.filter((f) => f && typeof f === 'object' && typeof f.id === 'string').slice(0, 100) : [];
  return { pid, workerId, instance, intervalMs, time, points: kept, findings: kf };
}

// Only what the catalog declares: a name, and exactly its attributes (no two labels of a series
// can then collide, and no process can pass for another).
function parsePoint(p) {
  const known = p && typeof p === 'object' ? CATALOG_ATTRIBUTES.get(p.name) : undefined;
  if (!known) return null;
  const attributes = {};
  if (p.attributes !== undefined) {
    if (!p.attributes || typeof p.attributes !== 'object') return null;
    for (const [k, v] of Object.entries(p.attributes)) {
      if (!known.has(k) || typeof v !== 'string' || v.length > 4096) return null;
      attributes[k] = v;
    }
  }
  if (p.histogram !== undefined) {
    const h = p.histogram;
    if (!h || !Array.isArray(h.bounds) || !Array.isArray(h.counts) || h.bounds.length > 64) return null;
    if (h.counts.length < h.bounds.length || h.counts.length > h.bounds.length + 1) return null;
    if (!h.bounds.every(Number.isFinite) || !h.counts.every((c) => Number.isFinite(c) && c >= 0)) return null;
    if (!Number.isFinite(h.sum) || !Number.isFinite(h.count)) return null;
    return { name: p.name, attributes, histogram: { bounds: h.bounds, counts: h.counts, sum: h.sum, count: h.count } };
  }
  if (!Number.isFinite(p.value)) return null;
  return { name: p.name, attributes, value: p.value };
}

function safeCall(fn) {
  try {
    const r = fn();
    if (r && typeof r.catch === 'function') r.catch(() => countError('multiprocess'));
  } catch {
    countError('multiprocess');
  }
}

module.exports = {
  createMultiprocess, createHub, createMember, processIdentity, processAttributes,
  PUSH_PATH, PUSH_HEADER, MAX_BODY_BYTES, TTL_INTERVALS, PID_ATTRIBUTE, WORKER_ATTRIBUTE,
};
