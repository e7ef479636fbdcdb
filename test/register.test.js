'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { ROOT, REGISTER, FIXTURES, runNode, lastJson, freePort, parsePrometheus, sampleValue } = require('./helpers/child');

function assertServed(stdout) {
  const out = lastJson(stdout);
  assert.equal(out.status, 200, JSON.stringify(out));
  const samples = parsePrometheus(out.text);
  assert.equal(sampleValue(samples, 'nodejs_uv_threadpool_size'), 4);
  return samples;
}

describe('loading uvscope', function () {
  let port;
  beforeEach(async () => {
    port = await freePort();
  });

  it('node --require uvscope/register app.js serves metrics and the app exits on its own', async () => {
    const r = await runNode(['--require', 'uvscope/register', path.join(FIXTURES, 'scrape-self.js')], {
      env: { UVSCOPE_PROMETHEUS_PORT: String(port) },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assertServed(r.stdout);
  });

  it('node --import uvscope/register app.mjs serves metrics and counts an ESM import { lookup }', async () => {
    const r = await runNode(['--import', 'uvscope/register', path.join(FIXTURES, 'scrape-self.mjs')], {
      env: { UVSCOPE_PROMETHEUS_PORT: String(port) },
    });
    assert.equal(r.code, 0, r.stderr);
    const samples = assertServed(r.stdout);
    assert.equal(sampleValue(samples, 'dns_lookup_duration_seconds_count', { dns_question_name: 'localhost', error_type: '' }), 1);
  });

  it('NODE_OPTIONS="--require uvscope/register" reaches child processes', async () => {
    const childPort = await freePort();
    const r = await runNode([path.join(FIXTURES, 'spawn-child.js')], {
      env: { NODE_OPTIONS: `--require ${REGISTER}`, UVSCOPE_PROMETHEUS_PORT: String(port), CHILD_PORT: String(childPort) },
    });
    assert.equal(r.code, 0, r.stderr);
    assertServed(r.stdout);
  });

  it('in worker_threads the preload opens no second endpoint', async () => {
    const r = await runNode(['--require', REGISTER, path.join(FIXTURES, 'worker.js')], {
      env: { UVSCOPE_PROMETHEUS_PORT: String(port) },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /UVSCOPE_/);
    assertServed(r.stdout);
  });

  // What was loaded, and whether uvscope's endpoint was listening, as seen from inside the app.
  const LOADED = `
    const loaded = () => Object.keys(require.cache).filter((f) => /node_modules[\\\\/](prom-client|hot-shots|@opentelemetry)[\\\\/]/.test(f)).length;
    const listening = () => process.getActiveResourcesInfo().filter((t) => t === 'TCPServerWrap').length;
  `;

  it('a process that exits before its loop turns never loads the exporters\' libraries', async () => {
    const r = await runNode(['--require', REGISTER, '-e', `${LOADED}
      const wrapped = !/cares|getaddrinfo/.test(require('dns').lookup.toString());
      process.on('exit', () => console.log(JSON.stringify({ wrapped, loaded: loaded() })));
    `], { env: { UVSCOPE_EXPORTERS: 'prometheus,datadog,otlp', UVSCOPE_PROMETHEUS_PORT: String(port) } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.deepEqual(lastJson(r.stdout), { wrapped: true, loaded: 0 });
  });

  it('a long-running app gets the exporters on its first timer tick, after its top-level code', async () => {
    const r = await runNode(['--require', REGISTER, '-e', `${LOADED}
      // The app sets the pool size in its own code: still the size uvscope reports.
      process.env.UV_THREADPOOL_SIZE = '6';
      const server = require('net').createServer().listen(0);
      const atTop = loaded();
      const served = () => fetch('http://127.0.0.1:${port}/metrics').then((res) => res.status, (err) => err.cause ? err.cause.code : err.message);
      setTimeout(async () => {
        const afterTick = { loaded: loaded(), status: await served() };
        await new Promise((resolve) => setTimeout(resolve, 1200));
        const res = await fetch('http://127.0.0.1:${port}/metrics');
        console.log(JSON.stringify({ atTop, afterTick, status: res.status, text: await res.text() }));
        server.close();
      }, 5);
    `], { env: { UVSCOPE_PROMETHEUS_PORT: String(port) } });
    assert.equal(r.code, 0, r.stderr);
    const out = lastJson(r.stdout);
    assert.equal(out.atTop, 0, 'no exporter library is loaded during the app\'s top-level code');
    // Its own endpoint writes the exposition itself: prom-client is loaded only for an app's registry.
    assert.deepEqual(out.afterTick, { loaded: 0, status: 200 }, 'uvscope serves once the loop has turned, loading no library for it');
    assert.equal(out.status, 200);
    assert.equal(sampleValue(parsePrometheus(out.text), 'nodejs_uv_threadpool_size'), 6);
  });

  it('UVSCOPE_DISABLED=1 starts nothing and leaves dns.lookup alone', async () => {
    const r = await runNode(['--require', REGISTER, '-e', `
      const dns = require('dns');
      console.log(JSON.stringify({ agent: require(${JSON.stringify(ROOT)}).getAgent(), wrapped: !/cares|getaddrinfo/.test(dns.lookup.toString()) }));
    `], { env: { UVSCOPE_DISABLED: '1', UVSCOPE_PROMETHEUS_PORT: String(port) } });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(lastJson(r.stdout), { agent: null, wrapped: false });
  });

  it('start() twice is a no-op, and two installed copies never both start', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-copies-'));
    try {
      for (const copy of ['a', 'b']) {
        const target = path.join(dir, copy, 'node_modules', 'uvscope');
        fs.mkdirSync(target, { recursive: true });
        for (const entry of ['package.json', 'register.js', 'lib', 'exporters']) {
          fs.cpSync(path.join(ROOT, entry), path.join(target, entry), { recursive: true });
        }
        // prom-client comes from the repo's node_modules
        fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, copy, 'node_modules', 'uvscope', 'node_modules'));
      }
      const r = await runNode(['-e', `
        const a = require(${JSON.stringify(path.join(dir, 'a', 'node_modules', 'uvscope'))});
        const b = require(${JSON.stringify(path.join(dir, 'b', 'node_modules', 'uvscope'))});
        const first = a.start({ prometheus: { port: ${port} } });
        const again = a.start({ prometheus: { port: ${port} } });
        const other = b.start({ prometheus: { port: ${port} } });
        console.log(JSON.stringify({ again: first === again, other: first === other, distinctModules: a !== b }));
        a.stop();
      `], {});
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stderr, /EADDRINUSE|UVSCOPE_LISTEN_FAILED/);
      assert.deepEqual(lastJson(r.stdout), { again: true, other: true, distinctModules: true });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a bad setting warns once, naming the variable, the value and what is accepted, and the app runs', async () => {
    const r = await runNode(['--require', REGISTER, path.join(FIXTURES, 'scrape-self.js')], {
      env: { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_EXPORTERS: 'prometheus,bogus', UVSCOPE_INTERVAL_MS: 'abc' },
    });
    assert.equal(r.code, 0, r.stderr);
    const warnings = r.stderr.split('\n').filter((l) => l.includes('UVSCOPE_INVALID_OPTION'));
    assert.equal(warnings.length, 2, r.stderr);
    assert.match(r.stderr, /UVSCOPE_EXPORTERS="prometheus,bogus" is not valid: expected a comma-separated list of prometheus(, [a-z]+)*, or none; using prometheus/);
    assert.match(r.stderr, /UVSCOPE_INTERVAL_MS="abc" is not valid: expected an integer number of milliseconds from 50 to 3600000; using 1000/);
    const samples = assertServed(r.stdout);
    assert.equal(sampleValue(samples, 'uvscope_errors_total', { component: 'options' }), 2);
  });

  it('a port already in use gives one warning and the app keeps running', async () => {
    const net = require('net');
    const blocker = net.createServer().listen(port, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    try {
      const r = await runNode(['--require', REGISTER, '-e', 'setTimeout(() => console.log("app done"), 300)'], {
        env: { UVSCOPE_PROMETHEUS_PORT: String(port) },
      });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /app done/);
      assert.match(r.stderr, new RegExp(`UVSCOPE_LISTEN_FAILED.*127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\).*UVSCOPE_PROMETHEUS_PORT`));
      assert.equal(r.stderr.split('\n').filter((l) => l.includes('UVSCOPE_')).length, 1);
    } finally {
      blocker.close();
    }
  });
});
