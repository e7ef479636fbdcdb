'use strict';

const http = require('http');
const EventEmitter = require('events');
const { warnOnce, countError, reportError } = require('../core/errors');
const { WARNINGS } = require('../core/warnings');
const { createMultiprocess } = require('./multiprocess');
const { withoutTracing, markOwnServer } = require('../core/own-io');

/**
 * A route's handler: answers one GET or HEAD request (sendBody() leaves the body out for HEAD); it
 * may return a promise, whose rejection is counted and answered with 500.
 * @callback RouteHandler
 * @param {import('http').IncomingMessage} req
 * @param {import('http').ServerResponse} res
 * @returns {void|Promise<void>}
 */

/**
 * The agent's one HTTP server (loopback by default, unref'd, its connections too, so it never
 * keeps the app alive). Exporters and the agent add routes: /metrics (Prometheus),
 * /snapshot.json (the agent), ... Only GET and HEAD are served, and the pushes of other processes
 * of the app when this one holds the port (lib/endpoint/multiprocess/); when another holds it, this
 * process sends its snapshots there and takes the port over if that process goes away.
 */
class AgentServer {
  /** @type {Map<string, { handler: RouteHandler, description?: string }>} */
  #routes = new Map();
  #host;
  #port;
  /** @type {import('http').Server | null} */
  #server = null;
  #closed = false;
  #multiprocess;
  #ready;
  #onBeforeExit;

  /** @param {AgentServerOptions} options */
  constructor({ host, port, settings, what, component, multiprocess: mp = { aggregate: false } }) {
    this.#host = host;
    this.#port = port;
    const [hostVar, portVar] = settings;
    this.#multiprocess = createMultiprocess({
      host, port, what, portVar,
      intervalMs: mp.intervalMs || 1000,
      aggregate: mp.aggregate === true,
      maxProcesses: mp.maxProcesses || 128,
      ttlMs: mp.ttlMs,
      lookup: mp.lookup,
      listen: () => this.#listen(),
      onListenFailed(/** @type {NodeJS.ErrnoException} */ err) {
        countError(component);
        const hint = err.code === 'EADDRINUSE'
          ? `the port is in use; set ${portVar} to a free port (0 picks one)`
          : `check ${hostVar} and ${portVar}`;
        warnOnce(WARNINGS.LISTEN_FAILED, `uvscope: cannot serve ${what} on ${host}:${port} (${err.code || err.message}): ${hint}. The app goes on without this endpoint.`);
      },
    });
    this.#ready = this.#multiprocess.start().then(() => {
      if (!this.#server) return null;
      const a = /** @type {import('net').AddressInfo} */ (this.#server.address());
      return { host: a.address, port: a.port };
    });
    // A process that does not hold the port sends its last figures when it ends on its own
    // (beforeExit: the loop is empty), holding the process at most 1 s for it.
    this.#onBeforeExit = () => {
      process.off('beforeExit', this.#onBeforeExit);
      if (this.#multiprocess.role === 'member' && typeof mp.sample === 'function') this.#multiprocess.finalPush(mp.sample).catch(() => {});
    };
    process.on('beforeExit', this.#onBeforeExit);
  }

  /** @returns {import('http').Server | null} the server listening now, if this process does */
  get server() {
    return this.#server;
  }

  /**
   * Where it listens, or null when it could not (one warning said why) or another process holds
   * the port (lib/endpoint/multiprocess/).
   * @returns {Promise<{ host: string, port: number } | null>}
   */
  get ready() {
    return this.#ready;
  }

  /** 'starting', 'holder', 'member' or 'none' */
  get role() {
    return this.#multiprocess.role;
  }

  /**
   * Serve GET/HEAD on an exact path (a later route on the same path replaces the earlier one).
   * @param {string} path
   * @param {RouteHandler} handler
   * @param {string} [description] listed in the 404 answer
   */
  route(path, handler, description) {
    this.#routes.set(path, { handler, description });
  }

  /**
   * Every process served here, this one's latest snapshot first (lib/endpoint/multiprocess/).
   * @param {object|null} own
   * @returns {{ attributes: Record<string, string>, snapshot: object }[]}
   */
  sources(own) {
    return this.#multiprocess.sources(own);
  }

  /** @returns {object[]} the other processes served here (for /snapshot.json) */
  others() {
    return this.#multiprocess.others();
  }

  /**
   * After each sample: a process that does not hold the port sends its snapshot to the one that does.
   * @param {object} snapshot
   */
  export(snapshot) {
    return this.#multiprocess.export(snapshot);
  }

  /** @returns {Promise<void>} */
  close() {
    this.#closed = true;
    process.off('beforeExit', this.#onBeforeExit);
    this.#multiprocess.close();
    if (!this.#server) return Promise.resolve();
    const s = this.#server;
    return new Promise((resolve) => {
      s.close(() => resolve());
      if (typeof s.closeAllConnections === 'function') s.closeAllConnections();
    });
  }

  #onRequest(req, res) {
    // Another process of the app sending its snapshot (POST, from this machine only).
    if (this.#multiprocess.handle(req, res)) return;
    const path = (req.url || '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    const route = this.#routes.get(path);
    if (!route) {
      const list = [...this.#routes].map(([p, r]) => (r.description ? `${r.description} at ${p}` : p)).join(', ');
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`uvscope: ${list}\n`);
      return;
    }
    try {
      const done = route.handler(req, res);
      if (done && typeof done.catch === 'function') done.catch((err) => failed(res, err));
    } catch (err) {
      failed(res, err);
    }
  }

  /**
   * A fresh server for each attempt: the first, and each takeover after the holder is gone.
   * @returns {Promise<Error|null>}
   */
  #listen() {
    const candidate = http.createServer((req, res) => this.#onRequest(req, res));
    // The requests served here are uvscope's (its port, not the app's server): they make no span in
    // the app's traces. OpenTelemetry's http instrumentation starts its server span in a wrapper of
    // http.Server.prototype.emit from the request's headers alone (ROOT_CONTEXT), so no context
    // can suppress it; this server emits with EventEmitter's own emit, which http.Server inherits
    // unchanged (Node 20 to 26), and the wrapper never sees its requests. dd-trace's server plugin
    // keeps the noop store the listen below ran in (lib/core/own-io.js withoutTracing).
    candidate.emit = EventEmitter.prototype.emit;
    markOwnServer(candidate); // not one of the app's listening sockets (lib/sources/listen)
    // A scraper's keep-alive connection must not keep the app alive.
    candidate.on('connection', (socket) => socket.unref());
    return new Promise((resolve) => {
      candidate.once('error', (err) => resolve(err));
      // exclusive: a node:cluster worker binds the port itself, so two workers never share it
      // round-robin (each request would reach one of them); the second gets EADDRINUSE and joins.
      // Without tracing: the app's tracers make no span of the listen's lookup, and the requests
      // served here (uvscope's port, not the app's) run in that context too (lib/core/own-io.js).
      withoutTracing(() => candidate.listen({ port: this.#port, host: this.#host, exclusive: true }, () => {
        if (this.#closed) {
          candidate.close();
          resolve(new Error('closed'));
          return;
        }
        this.#server = candidate;
        resolve(null);
      }));
      candidate.unref();
    });
  }
}

/**
 * @typedef {object} AgentServerOptions
 * @property {string} host
 * @property {number} port 0 picks a free port
 * @property {string[]} settings the variables that set host and port, for the warning when
 *   listening fails (e.g. ['UVSCOPE_PROMETHEUS_HOST', 'UVSCOPE_PROMETHEUS_PORT'])
 * @property {string} what what it serves, for that warning
 * @property {string} component counted in uvscope.errors when listening fails
 * @property {{ aggregate: boolean, maxProcesses?: number, ttlMs?: number, intervalMs?: number,
 *   lookup?: Function, sample?: () => object }} [multiprocess] several processes on one
 *   port (resolved options' multiprocess, the sampling interval, the unwrapped dns.lookup, and
 *   a sample to send last when the process ends on its own); without it, one process per port
 */

/**
 * The agent's HTTP endpoint (see AgentServer), listening from now on.
 * @param {AgentServerOptions} options
 * @returns {AgentServer}
 */
function createAgentServer(options) {
  return new AgentServer(options);
}

/**
 * Where the agent's endpoint listens, from the resolved options: the Prometheus server when
 * Prometheus is on (unless the app gave its own registry: the app serves HTTP then and uvscope
 * opens no port), else the snapshot server (UVSCOPE_SNAPSHOT_HOST/PORT); none when no exporter
 * is on (UVSCOPE_EXPORTERS=none keeps everything in the process).
 * @param {Readonly<object>} options resolved options (lib/agent/options.js)
 * @returns {{ host: string, port: number, settings: string[], what: string, component: string } | null}
 */
function endpointFor(options) {
  if (options.exporters.length === 0) return null;
  if (options.exporters.includes('prometheus')) {
    if (options.prometheus.registry) return null;
    return {
      host: options.prometheus.host,
      port: options.prometheus.port,
      settings: ['UVSCOPE_PROMETHEUS_HOST', 'UVSCOPE_PROMETHEUS_PORT'],
      what: 'Prometheus metrics',
      component: 'exporter:prometheus',
    };
  }
  return {
    host: options.snapshot.host,
    port: options.snapshot.port,
    settings: ['UVSCOPE_SNAPSHOT_HOST', 'UVSCOPE_SNAPSHOT_PORT'],
    what: 'the snapshot',
    component: 'server',
  };
}

/**
 * Answer with a body, or only the headers for HEAD.
 * @param {import('http').IncomingMessage} req
 * @param {import('http').ServerResponse} res
 * @param {string} contentType
 * @param {string} body
 * @param {Record<string, string>} [headers] more response headers
 */
function sendBody(req, res, contentType, body, headers = {}) {
  res.writeHead(200, { ...headers, 'Content-Type': contentType }).end(req.method === 'HEAD' ? undefined : body);
}

function failed(res, err) {
  reportError('server', err);
  if (res.headersSent) res.destroy();
  else res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('uvscope: this request failed\n');
}

module.exports = { AgentServer, createAgentServer, endpointFor, sendBody };
