'use strict';

const http = require('http');
const { warnOnce, countError, reportError } = require('../core/errors');
const { WARNINGS } = require('../core/warnings');
const { createMultiprocess } = require('./multiprocess');

/**
 * A route's handler: answers one GET or HEAD request (sendBody() leaves the body out for HEAD); it
 * may return a promise, whose rejection is counted and answered with 500.
 * @callback RouteHandler
 * @param {import('http').IncomingMessage} req
 * @param {import('http').ServerResponse} res
 * @returns {void|Promise<void>}
 */

/**
 * The agent's HTTP endpoint.
 * @typedef {object} AgentServer
 * @property {(path: string, handler: RouteHandler, description?: string) => void} route serve
 *   GET/HEAD on an exact path (a later route on the same path replaces the earlier one)
 * @property {Promise<{ host: string, port: number } | null>} ready where it listens, or null when
 *   it could not (one warning said why) or another process holds the port (lib/endpoint/multiprocess.js)
 * @property {import('http').Server | null} server the server listening now, if this process does
 * @property {(own: object|null) => { attributes: Record<string, string>, snapshot: object }[]} sources
 *   every process served here, this one's latest snapshot first (lib/endpoint/multiprocess.js)
 * @property {() => object[]} others the other processes served here (for /snapshot.json)
 * @property {(snapshot: object) => void} export after each sample: a process that does not hold
 *   the port sends its snapshot to the one that does
 * @property {() => Promise<void>} close
 */

/**
 * The agent's one HTTP server (loopback by default, unref'd, its connections too, so it never
 * keeps the app alive). Exporters and the agent add routes: /metrics (Prometheus),
 * /snapshot.json (the agent), ... Only GET and HEAD are served, and the pushes of other processes
 * of the app when this one holds the port (lib/endpoint/multiprocess.js); when another holds it, this
 * process sends its snapshots there and takes the port over if that process goes away.
 * @param {object} options
 * @param {string} options.host
 * @param {number} options.port 0 picks a free port
 * @param {string[]} options.settings the variables that set host and port, for the warning when
 *   listening fails (e.g. ['UVSCOPE_PROMETHEUS_HOST', 'UVSCOPE_PROMETHEUS_PORT'])
 * @param {string} options.what what it serves, for that warning
 * @param {string} options.component counted in uvscope.errors when listening fails
 * @param {{ aggregate: boolean, maxProcesses: number, ttlMs?: number, intervalMs: number,
 *   lookup?: Function, sample?: () => object }} [options.multiprocess] several processes on one
 *   port (resolved options' multiprocess, the sampling interval, the unwrapped dns.lookup, and
 *   a sample to send last when the process ends on its own); without it, one process per port
 * @returns {AgentServer}
 */
function createAgentServer({ host, port, settings, what, component, multiprocess: mp = { aggregate: false } }) {
  const routes = new Map(); // path -> { handler, description }
  const [hostVar, portVar] = settings;
  let server = null;
  let closed = false;

  function onRequest(req, res) {
    // Another process of the app sending its snapshot (POST, from this machine only).
    if (multiprocess.handle(req, res)) return;
    const path = (req.url || '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    const route = routes.get(path);
    if (!route) {
      const list = [...routes].map(([p, r]) => (r.description ? `${r.description} at ${p}` : p)).join(', ');
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

  // A fresh server for each attempt: the first, and each takeover after the holder is gone.
  function listen() {
    const candidate = http.createServer(onRequest);
    // A scraper's keep-alive connection must not keep the app alive.
    candidate.on('connection', (socket) => socket.unref());
    return new Promise((resolve) => {
      candidate.once('error', (err) => resolve(err));
      // exclusive: a node:cluster worker binds the port itself, so two workers never share it
      // round-robin (each request would reach one of them); the second gets EADDRINUSE and joins.
      candidate.listen({ port, host, exclusive: true }, () => {
        if (closed) {
          candidate.close();
          resolve(new Error('closed'));
          return;
        }
        server = candidate;
        resolve(null);
      });
      candidate.unref();
    });
  }

  const multiprocess = createMultiprocess({
    host, port, what, portVar,
    intervalMs: mp.intervalMs || 1000,
    aggregate: mp.aggregate === true,
    maxProcesses: mp.maxProcesses || 128,
    ttlMs: mp.ttlMs,
    lookup: mp.lookup,
    listen,
    onListenFailed(/** @type {NodeJS.ErrnoException} */ err) {
      countError(component);
      const hint = err.code === 'EADDRINUSE'
        ? `the port is in use; set ${portVar} to a free port (0 picks one)`
        : `check ${hostVar} and ${portVar}`;
      warnOnce(WARNINGS.LISTEN_FAILED, `uvscope: cannot serve ${what} on ${host}:${port} (${err.code || err.message}): ${hint}. The app goes on without this endpoint.`);
    },
  });

  const ready = multiprocess.start().then(() => {
    if (!server) return null;
    const a = /** @type {import('net').AddressInfo} */ (server.address());
    return { host: a.address, port: a.port };
  });

  // A process that does not hold the port sends its last figures when it ends on its own
  // (beforeExit: the loop is empty), holding the process at most 1 s for it.
  const onBeforeExit = () => {
    process.off('beforeExit', onBeforeExit);
    if (multiprocess.role === 'member' && typeof mp.sample === 'function') multiprocess.finalPush(mp.sample).catch(() => {});
  };
  process.on('beforeExit', onBeforeExit);

  return {
    get server() {
      return server;
    },
    ready,
    route(path, handler, description) {
      routes.set(path, { handler, description });
    },
    sources: (own) => multiprocess.sources(own),
    others: () => multiprocess.others(),
    export: (snapshot) => multiprocess.export(snapshot),
    /** 'starting', 'holder', 'member' or 'none' */
    get role() {
      return multiprocess.role;
    },
    close() {
      closed = true;
      process.off('beforeExit', onBeforeExit);
      multiprocess.close();
      if (!server) return Promise.resolve();
      const s = server;
      return new Promise((resolve) => {
        s.close(() => resolve());
        if (typeof s.closeAllConnections === 'function') s.closeAllConnections();
      });
    },
  };
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

module.exports = { createAgentServer, endpointFor, sendBody };
