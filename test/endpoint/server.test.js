'use strict';

const assert = require('node:assert/strict');
const net = require('net');
const { createAgentServer, endpointFor, sendBody } = require('../../lib/endpoint/server');
const { resolveOptions } = require('../../lib/agent/options');
const { ROOT, runNode, lastJson } = require('../helpers/child');

const ENDPOINT = { host: '127.0.0.1', port: 0, settings: ['UVSCOPE_SNAPSHOT_HOST', 'UVSCOPE_SNAPSHOT_PORT'], what: 'the snapshot', component: 'server' };

describe('server: the agent\'s HTTP endpoint', () => {
  it('serves GET and HEAD on each route added, 404 elsewhere, 405 for other methods, 500 when a handler fails', async () => {
    const server = createAgentServer(ENDPOINT);
    server.route('/a.json', (req, res) => sendBody(req, res, 'application/json', '{"a":1}'), 'a');
    server.route('/async', async () => {
      throw new Error('handler failed on purpose');
    });
    const { port } = await server.ready;
    try {
      const base = `http://127.0.0.1:${port}`;
      const a = await fetch(`${base}/a.json?x=1`);
      assert.equal(a.status, 200);
      assert.equal(a.headers.get('content-type'), 'application/json');
      assert.deepEqual(await a.json(), { a: 1 });
      const head = await fetch(`${base}/a.json`, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(await head.text(), '');
      const missing = await fetch(`${base}/b`);
      assert.equal(missing.status, 404);
      assert.match(await missing.text(), /a at \/a\.json/);
      const post = await fetch(`${base}/a.json`, { method: 'POST', body: 'x' });
      assert.equal(post.status, 405);
      assert.equal(post.headers.get('allow'), 'GET, HEAD');
      const failed = await fetch(`${base}/async`);
      assert.equal(failed.status, 500);
    } finally {
      await server.close();
    }
  });

  it('a port in use: one warning naming the setting, ready is null, nothing thrown', async () => {
    const blocker = net.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    try {
      const r = await runNode(['-e', `
        const { createAgentServer } = require(${JSON.stringify(require.resolve('../../lib/endpoint/server'))});
        const server = createAgentServer(${JSON.stringify({ ...ENDPOINT, port: blocker.address().port })});
        server.ready.then(async (at) => {
          await server.close();
          console.log(JSON.stringify({ at }));
        });
      `]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(lastJson(r.stdout), { at: null });
      const warnings = r.stderr.split('\n').filter((l) => l.includes('UVSCOPE_'));
      assert.equal(warnings.length, 1, r.stderr);
      assert.match(warnings[0], /UVSCOPE_LISTEN_FAILED.*cannot serve the snapshot on 127\.0\.0\.1:\d+ \(EADDRINUSE\).*UVSCOPE_SNAPSHOT_PORT/);
    } finally {
      blocker.close();
    }
  });

  it('listens where the options say: the Prometheus port with Prometheus, the snapshot port without, nowhere with none or an app registry', () => {
    const at = (options) => {
      const e = endpointFor(resolveOptions(options, {}));
      return e && `${e.host}:${e.port}`;
    };
    assert.equal(at({ prometheus: { port: 9100 }, snapshot: { port: 9200 } }), '127.0.0.1:9100');
    assert.equal(at({ exporters: 'datadog', prometheus: { port: 9100 }, snapshot: { port: 9200 } }), '127.0.0.1:9200');
    assert.equal(at({ exporters: 'otlp' }), '127.0.0.1:9464', 'the same default port as Prometheus, so uvscope report finds it');
    assert.equal(at({ exporters: 'none' }), null);
    assert.equal(at({ prometheus: { registry: { registerMetric() {}, metrics() {} } } }), null);
  });

  it('with Datadog alone, the agent serves /snapshot.json and the page; stop() closes it and the app exits on its own', async () => {
    const r = await runNode(['-e', `
      const uvscope = require(${JSON.stringify(ROOT)});
      const agent = uvscope.start({ exporters: 'datadog', snapshot: { port: 0 }, datadog: { host: '127.0.0.1', port: 9 } });
      agent.sampleNow();
      agent.server.ready.then(async ({ port }) => {
        const base = 'http://127.0.0.1:' + port;
        const snapshot = await (await fetch(base + '/snapshot.json')).json();
        const page = await fetch(base + '/');
        const metrics = await fetch(base + '/metrics');
        await uvscope.stop();
        const after = await fetch(base + '/snapshot.json').then(() => 'open', () => 'closed');
        console.log(JSON.stringify({ pid: snapshot.pid === process.pid, points: snapshot.points.length > 0, page: page.status, type: page.headers.get('content-type'), metrics: metrics.status, after }));
      });
    `]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(lastJson(r.stdout), { pid: true, points: true, page: 200, type: 'text/html; charset=utf-8', metrics: 404, after: 'closed' });
  });
});
