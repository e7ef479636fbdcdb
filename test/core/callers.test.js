'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { ROOT, runNode, lastJson } = require('../helpers/child');
const { describe: describeFile } = require('../../lib/core/callers');

describe('callers', () => {
  it('reduces a file under node_modules to its package name, else file:line', () => {
    assert.equal(describeFile('/app/node_modules/hot-shots/lib/transport.js', 10), 'hot-shots');
    assert.equal(describeFile('/app/node_modules/a/node_modules/@acme/statsd/index.js', 3), '@acme/statsd');
    assert.equal(describeFile(path.join(process.cwd(), 'src', 'client.js'), 42), path.join('src', 'client.js') + ':42');
  });

  it('names the package that looked a name up, through dgram too, past a tracer\'s wrapper', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-callers-'));
    try {
      for (const [pkg, body] of [
        ['statsd-like', // dgram looks the name up inside send() once the socket is bound (before that, send() is queued
        // and the lookup runs without the caller on the stack).
        `module.exports = () => { const s = require('dgram').createSocket('udp4'); s.bind(0, '127.0.0.1', () => s.send('x', 9, 'localhost', () => s.close())); };`],
        ['@acme/http-client', `module.exports = () => require('dns').lookup('localhost', () => {});`],
        // A tracer that wraps dns.lookup over uvscope's wrapper: its frames are not the caller.
        ['dd-trace', `const dns = require('dns'); const inner = dns.lookup;
          dns.lookup = function lookup() { return inner.apply(this, arguments); };`],
      ]) {
        fs.mkdirSync(path.join(dir, 'node_modules', pkg), { recursive: true });
        fs.writeFileSync(path.join(dir, 'node_modules', pkg, 'index.js'), body);
      }
      fs.writeFileSync(path.join(dir, 'app.js'), `
        const uvscope = require(${JSON.stringify(ROOT)});
        const agent = uvscope.start({ exporters: 'none', intervalMs: 3600000 });
        require('dd-trace');
        require('statsd-like')();
        require('@acme/http-client')();
        require('dns').lookup('localhost', () => setTimeout(() => {
          const dns = agent.samplers.find((s) => s.name === 'dns').details();
          console.log(JSON.stringify(dns.hosts[0].callers.map((c) => c.caller).sort()));
          uvscope.stop();
        }, 100));
      `);
      const r = await runNode([path.join(dir, 'app.js')], { cwd: dir });
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(lastJson(r.stdout), ['@acme/http-client', 'app.js:7', 'statsd-like']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('captures the callers of a name\'s first 8 lookups, then about one in 16, and no more than 20 a second beyond its first', () => {
    const { Names } = require('../../lib/sources/dns/names');
    let lookups = 0;
    let captures = 0;
    for (let k = 0; k < 50; k++) {
      // No endInterval(): the budget of the first second (20 beyond the first lookup) is not refilled.
      const names = new Names({ maxNames: 10, recentMs: 60000, resolver: () => null });
      const host = names.hostFor('a.test');
      for (let i = 0; i < 8; i++) assert.notEqual(host.started(names), null, `lookup ${i + 1}`);
      let n = 0;
      let c = 0;
      while (c < 13 && n < 13 * 31) {
        n++;
        if (host.started(names) !== null) c++;
      }
      assert.equal(c, 13, `captures after the first 8 within ${n} lookups`);
      lookups += n;
      captures += c;
      for (let i = 0; i < 500; i++) assert.equal(host.started(names), null, 'the budget of the second is spent');
      assert.equal(names.details()[0].callers.reduce((a, x) => a + x.count, 0), 21);
    }
    // Gaps drawn from 1..31 (mean 16) over 650 captures: the mean is within 16 ± 0.4 (one standard deviation).
    const gap = lookups / captures;
    assert.ok(gap > 14 && gap < 18, `one in ${gap}`);
  });

  it('finds the app frame past up to 40 frames of instrumentation, the same at every depth and after a chdir', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-callers-'));
    try {
      fs.mkdirSync(path.join(dir, 'node_modules', 'dd-trace'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'node_modules', 'dd-trace', 'index.js'), 'module.exports = function wrap(n, f) { return n === 0 ? f() : wrap(n - 1, f); };');
      fs.mkdirSync(path.join(dir, 'sub'));
      // wrap(d) puts d + 1 dd-trace frames between captureCaller and app.js's line 5.
      fs.writeFileSync(path.join(dir, 'app.js'), `
        const { captureCaller } = require(${JSON.stringify(path.join(ROOT, 'lib', 'core', 'callers.js'))});
        const wrap = require('dd-trace');
        const out = [];
        const at = (d) => wrap(d, captureCaller);
        for (let d = 0; d < 45; d++) out.push(at(d), at(d));
        process.chdir('sub');
        out.push(at(0));
        console.log(JSON.stringify(out));
      `);
      const r = await runNode([path.join(dir, 'app.js')], { cwd: dir });
      assert.equal(r.code, 0, r.stderr);
      const out = lastJson(r.stdout);
      // 40 frames are captured: the app's frame is the 40th at d = 38 (39 wrapper frames before it).
      for (let d = 0; d < 45; d++) assert.deepEqual(out.slice(2 * d, 2 * d + 2), d <= 38 ? ['app.js:5', 'app.js:5'] : ['(unknown)', '(unknown)'], `depth ${d}`);
      assert.equal(out[90], path.join(fs.realpathSync(dir), 'app.js') + ':5'); // outside the cwd: the whole path
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
