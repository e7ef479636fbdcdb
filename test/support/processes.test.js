'use strict';

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const { stopChild, cleanEnv, freePort } = require('../../support/processes');

/** A node child that prints "ready" once its SIGTERM handling is set up. */
function startChild(code) {
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => d.includes('ready') && resolve());
    child.once('exit', () => reject(new Error('the child exited before it was ready')));
  });
  return { child, ready };
}

describe('support/processes', () => {
  it('stopChild: SIGKILL by pid, resolved once the child has exited', async () => {
    const { child, ready } = startChild('console.log("ready"); setInterval(() => {}, 1000);');
    await ready;
    await stopChild(child);
    assert.equal(child.signalCode, 'SIGKILL');
    await stopChild(child); // already gone: resolves at once
    await stopChild(null);
  });

  it('stopChild with SIGTERM: a child that ends on it ends by it; one that ignores it is killed after the grace period', async () => {
    const polite = startChild('console.log("ready"); setInterval(() => {}, 1000);');
    await polite.ready;
    await stopChild(polite.child, { signal: 'SIGTERM', graceMs: 5000 });
    assert.equal(polite.child.signalCode, 'SIGTERM');

    const stubborn = startChild('process.on("SIGTERM", () => {}); console.log("ready"); setInterval(() => {}, 1000);');
    await stubborn.ready;
    await stopChild(stubborn.child, { signal: 'SIGTERM', graceMs: 200 });
    assert.equal(stubborn.child.signalCode, 'SIGKILL');
  });

  it('cleanEnv keeps no NODE_OPTIONS, UVSCOPE_* or UV_THREADPOOL_SIZE of the parent; freePort gives a port', async () => {
    const saved = { ...process.env };
    try {
      Object.assign(process.env, { NODE_OPTIONS: '--require x', UVSCOPE_EXPORTERS: 'none', UV_THREADPOOL_SIZE: '8', KEEP_ME: '1' });
      const env = cleanEnv({ UVSCOPE_INTERVAL_MS: '100' });
      assert.equal(env.NODE_OPTIONS, undefined);
      assert.equal(env.UVSCOPE_EXPORTERS, undefined);
      assert.equal(env.UV_THREADPOOL_SIZE, undefined);
      assert.equal(env.KEEP_ME, '1');
      assert.equal(env.UVSCOPE_INTERVAL_MS, '100');
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
    const port = await freePort();
    assert.ok(Number.isInteger(port) && port > 0 && port < 65536);
  });

  it('nothing under examples/ or bench/ requires a file under test/', () => {
    const fs = require('node:fs');
    const path = require('node:path');
    const root = path.join(__dirname, '..', '..');
    const offenders = [];
    const walk = (dir) => {
      for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
        const rel = path.join(dir, e.name);
        if (e.isDirectory()) walk(rel);
        else if (/\.(c|m)?js$/.test(e.name) && /require\([^)]*\btest\//.test(fs.readFileSync(path.join(root, rel), 'utf8'))) offenders.push(rel);
      }
    };
    walk('examples');
    walk('bench');
    assert.deepEqual(offenders, []);
  });
});
