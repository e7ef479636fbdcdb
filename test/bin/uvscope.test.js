'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const { parseArgs, nodeOptionsWithPreload } = require('../../bin/uvscope');
const { ROOT, FIXTURES, runNode, lastJson, freePort, parsePrometheus, sampleValue } = require('../helpers/child');

const BIN = path.join(ROOT, 'bin', 'uvscope.js');

describe('bin/uvscope', () => {
  it('parses flags before the command, with or without --', () => {
    assert.deepEqual(parseArgs(['--port', '9999', '--', 'node', 'app.js', '--port', '1']), {
      env: { UVSCOPE_PROMETHEUS_PORT: '9999' }, command: ['node', 'app.js', '--port', '1'], help: false,
    });
    assert.deepEqual(parseArgs(['--exporters=none', 'node', 'app.js']).env, { UVSCOPE_EXPORTERS: 'none' });
    assert.match(parseArgs(['--bogus', 'node']).error, /unknown option --bogus/);
    assert.match(parseArgs(['--port']).error, /--port needs a value/);
  });

  it('keeps existing NODE_OPTIONS and quotes the preload path', () => {
    assert.match(nodeOptionsWithPreload('--max-old-space-size=100'), /^--max-old-space-size=100 --require ".*register\.js"$/);
  });

  it('npx uvscope --port N -- node app.js runs the app with the agent, and passes its exit code through', async () => {
    const port = await freePort();
    const r = await runNode([BIN, '--port', String(port), '--', process.execPath, path.join(FIXTURES, 'scrape-self.js')], {
      env: { UVSCOPE_PROMETHEUS_PORT: String(port) },
    });
    assert.equal(r.code, 0, r.stderr);
    const out = lastJson(r.stdout);
    assert.equal(sampleValue(parsePrometheus(out.text), 'nodejs_uv_threadpool_dns_slots'), 2);
    const failing = await runNode([BIN, '--', process.execPath, '-e', 'process.exit(3)'], { env: { UVSCOPE_EXPORTERS: 'none' } });
    assert.equal(failing.code, 3);
    const usage = await runNode([BIN]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /usage: uvscope/);
  });
});
