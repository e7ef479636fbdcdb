'use strict';

const http = require('http');
const { warnOnce, countError, reportError } = require('./report');
const { WARNINGS } = require('./warnings');

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
 * @property {import('http').Server} server the node:http server
 * @property {(path: string, handler: RouteHandler, description?: string) => void} route serve
 *   GET/HEAD on an exact path (a later route on the same path replaces the earlier one)
 * @property {Promise<{ host: string, port: number } | null>} ready where it listens, or null when
 *   it could not (one warning said why)
 * @property {() => Promise<void>} close
 */

/**
 * The agent's one HTTP server (loopback by default, unref'd, its connections too, so it never
 * keeps the app alive). Exporters and the agent add routes: /metrics (Prometheus),
 * /snapshot.json (the agent), ... Only GET and HEAD are served.
 * @param {object} options
 * @param {string} options.host
 * @param {number} options.port 0 picks a free port
 * @param {string[]} options.settings the variables that set host and port, for the warning when
 *   listening fails (e.g. ['UVSCOPE_PROMETHEUS_HOST', 'UVSCOPE_PROMETHEUS_PORT'])
 * @param {string} options.what what it serves, for that warning
 * @param {string} options.component counted in uvscope.errors when listening fails
 * @returns {AgentServer}
 */
function createAgentServer({ host, port, settings, what, component }) {
  const routes = new Map(); // path -> { handler, description }

  const server = http.createServer((req, res) => {
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
  });
  // A scraper's keep-alive connection must not keep the app alive.
  server.on('connection', (socket) => socket.unref());

  const ready = new Promise((resolve) => {
    server.once('error', (/** @type {NodeJS.ErrnoException} */ err) => {
      countError(component);
      const [hostVar, portVar] = settings;
      const hint = err.code === 'EADDRINUSE'
        ? `the port is in use; set ${portVar} to a free port (0 picks one)`
        : `check ${hostVar} and ${portVar}`;
      warnOnce(WARNINGS.LISTEN_FAILED, `uvscope: cannot serve ${what} on ${host}:${port} (${err.code || err.message}): ${hint}. The app goes on without this endpoint.`);
      resolve(null);
    });
    server.listen(port, host, () => {
      const a = /** @type {import('net').AddressInfo} */ (server.address());
      resolve({ host: a.address, port: a.port });
    });
    server.unref();
  });

  return {
    server,
    ready,
    route(path, handler, description) {
      routes.set(path, { handler, description });
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        if (typeof server.closeAllConnections === 'function') server.closeAllConnections();
      });
    },
  };
}

/**
 * Where the agent's endpoint listens, from the resolved options: the Prometheus server when
 * Prometheus is on (unless the app gave its own registry: the app serves HTTP then and uvscope
 * opens no port), else the snapshot server (UVSCOPE_SNAPSHOT_HOST/PORT); none when no exporter
 * is on (UVSCOPE_EXPORTERS=none keeps everything in the process).
 * @param {Readonly<object>} options resolved options (lib/options.js)
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
