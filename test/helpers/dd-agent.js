'use strict';

// A stand-in for the Datadog Agent's trace intake on 127.0.0.1: keeps the spans dd-trace sends
// (msgpack, /v0.4 and /v0.5 traces) and answers {}. With the environment that points dd-trace at
// it and quiets its other traffic.

const http = require('node:http');
const { decode } = require('@msgpack/msgpack');

/**
 * Runs fn(env) with a stand-in listening, then returns the spans it received (after dd-trace's
 * last payload, sent on exit).
 * @param {(env: Record<string, string>) => Promise<unknown>} fn
 * @returns {Promise<object[]>}
 */
async function withDdAgent(fn) {
  const spans = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (/^\/v0\.[45]\/traces/.test(req.url)) for (const trace of /** @type {any[]} */ (decode(Buffer.concat(chunks)))) spans.push(...trace);
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  try {
    await fn({
      DD_TRACE_AGENT_URL: `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`,
      DD_TRACE_FLUSH_INTERVAL: '100',
      DD_TRACE_STARTUP_LOGS: 'false',
      DD_INSTRUMENTATION_TELEMETRY_ENABLED: 'false',
      DD_REMOTE_CONFIGURATION_ENABLED: 'false',
      DD_PROFILING_ENABLED: 'false',
      DD_RUNTIME_METRICS_ENABLED: 'false',
    });
    await new Promise((resolve) => setTimeout(resolve, 300)); // its last payload, sent on exit
    return spans;
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

module.exports = { withDdAgent };
