'use strict';

// What the preload loads (lib/agent/loader.js, lib/agent/start.js): only what must precede the
// app's first line. The rest (the other samplers, the catalog, the exporters' code, findings,
// report, endpoint) loads on the first timer tick; bench/startup.js measures what this saves.

const assert = require('assert');
const fs = require('fs');
const path = require('path');
const { ROOT, REGISTER, runNode, lastJson } = require('../helpers/child');
const { SOURCES } = require('../../lib/sources');

// Printed on exit by the app: uvscope's files in require.cache, relative to the repository, and
// whether each came through the preload's loader (an own `require` on its module object).
const REPORT = `
  const root = ${JSON.stringify(ROOT + path.sep)};
  const report = () => Object.keys(require.cache).filter((f) => f.startsWith(root) && !f.includes('node_modules'))
    .map((f) => ({ file: f.slice(root.length).split(path.sep).join('/'), viaLoader: Object.hasOwn(require.cache[f], 'require'), real: fs.realpathSync(f) === f }));
  const fs = require('fs');
  const path = require('path');
`;

// Parts the preload must not load: each is needed from the first sample on, not before.
const DEFERRED = [
  /^exporters\/(?!index\.js$)(?!\w+\/manifest\.js$)/,
  /^lib\/findings\//,
  /^lib\/report\//,
  /^lib\/endpoint\/(?!manifest\.js$)/,
  /^lib\/snapshot\//,
  /^lib\/index\.js$/,
  /^lib\/agent\/(sampling|resolver)\.js$/,
  /^lib\/sources\/(eventloop|memory|resources)\.js$/,
  /^lib\/sources\/threadpool\/(?!index\.js$)/,
  // The metrics' declarations (read by the catalog) and the resolver configuration.
  /^lib\/sources\/(metric-def|dns\/metrics|dns\/resolver)\.js$/,
  // The DNS sampler's model (the figures by name, the DNS-slot model): from the first lookup on;
  // a name's figures and the caller capture: from the app's first lookup on.
  /^lib\/sources\/dns\/(names|slots|name-figures|recent)\.js$/,
  /^lib\/core\/callers\.js$/,
];

describe('the preload loads only what must precede the app\'s first line', function () {
  this.timeout(30000);

  // With the defaults (Prometheus). The Datadog and OTLP exporters' early work (span tags) loads
  // their index.js in the preload; test/register.test.js checks it never loads their libraries.
  it('`node -r uvscope/register -e` loads no exporter code, findings, report, endpoint, catalog or later source, and wraps dns.lookup', async () => {
    const r = await runNode(['--require', REGISTER, '-e', `${REPORT}
      const wrapped = !/cares|getaddrinfo/.test(require('dns').lookup.toString());
      process.on('exit', () => console.log(JSON.stringify({ wrapped, files: report() })));
    `], { env: { UVSCOPE_PROMETHEUS_PORT: '0' } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    const { wrapped, files } = lastJson(r.stdout);
    assert.equal(wrapped, true);
    const names = files.map((f) => f.file);
    for (const name of ['register.js', 'lib/agent/start.js', 'lib/agent/options.js', 'lib/sources/dns/wrapper.js', 'exporters/prometheus/manifest.js']) {
      assert.ok(names.includes(name), `${name} is loaded: ${names.join(', ')}`);
    }
    const deferred = names.filter((n) => DEFERRED.some((re) => re.test(n)));
    assert.deepEqual(deferred, [], 'loaded by the preload, though only needed from the first sample on');
    // Every file but register.js and the loader itself came through the loader, under its real path
    // (the key Node's own loader would use, so the app's require('uvscope') gets the same instances).
    const notViaLoader = files.filter((f) => !f.viaLoader).map((f) => f.file);
    assert.deepEqual(notViaLoader.sort(), ['lib/agent/loader.js', 'register.js']);
    assert.ok(files.every((f) => f.real));
  });

  // Two costs the preload avoids (bench/startup.js measured them): the public `module` builtin
  // (on Node 20 it brings the ESM loader along; the Module class is module.constructor), and
  // path.resolve/join/normalize from uvscope's own code (their normalizeString, with Node's own
  // resolution of the -r paths, got hot enough for V8 to compile it with Maglev on Node 24).
  it('an app run from a file: the preload loads no `module` builtin and calls no path normalizing function from uvscope\'s files', async () => {
    const dir = fs.mkdtempSync(path.join(require('os').tmpdir(), 'uvscope-preload-'));
    const spy = path.join(dir, 'spy.js');
    const app = path.join(dir, 'app.js');
    // Loaded before register.js: records path calls whose direct caller is one of uvscope's files.
    fs.writeFileSync(spy, `
      const path = require('path');
      const root = ${JSON.stringify(ROOT + path.sep)};
      const seen = [];
      for (const name of ['resolve', 'join', 'normalize', 'relative']) {
        const original = path[name];
        path[name] = function () {
          const caller = (new Error().stack.split('\\n')[2] || '');
          if (caller.includes(root) && !caller.includes('node_modules')) seen.push(name + ' ' + caller.trim());
          return original.apply(this, arguments);
        };
      }
      globalThis.__pathCalls = seen;
    `);
    fs.writeFileSync(app, `
      const builtins = process.moduleLoadList.filter((m) => m === 'NativeModule module');
      console.log(JSON.stringify({ builtins, pathCalls: globalThis.__pathCalls }));
    `);
    try {
      const r = await runNode(['--require', spy, '--require', REGISTER, app], { env: { UVSCOPE_PROMETHEUS_PORT: '0' } });
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(lastJson(r.stdout), { builtins: [], pathCalls: [] });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('after the first tick, the app\'s require(\'uvscope\') gets the agent and the same modules as the preload', async () => {
    const r = await runNode(['--require', REGISTER, '-e', `${REPORT}
      setTimeout(() => {
        const uvscope = require(${JSON.stringify(ROOT)});
        const agent = uvscope.getAgent();
        const channels = require(${JSON.stringify(path.join(ROOT, 'lib/core/channels.js'))});
        const ok = {
          agent: agent !== null,
          sampled: agent.sampleNow().points.some((p) => p.name === 'nodejs.eventloop.utilization'),
          catalog: uvscope.catalog.some((m) => m.name === 'dns.lookup.duration'),
          sameChannels: require.cache[${JSON.stringify(path.join(ROOT, 'lib/core/channels.js'))}].exports === channels,
          exporters: agent.exporters.map((e) => e.name),
          files: report().length,
          // The endpoint's member side: only for a process that finds the port held by another.
          member: report().some((f) => f.file === 'lib/endpoint/multiprocess/member.js'),
        };
        console.log(JSON.stringify(ok));
        uvscope.stop();
      }, 20);
    `], { env: { UVSCOPE_EXPORTERS: 'prometheus', UVSCOPE_PROMETHEUS_PORT: '0' } });
    assert.equal(r.code, 0, r.stderr);
    const out = lastJson(r.stdout);
    assert.deepEqual({ ...out, files: undefined }, { agent: true, sampled: true, catalog: true, sameChannels: true, exporters: ['prometheus'], files: undefined, member: false });
    // Each file once: no second copy under another key.
    assert.ok(out.files > 40, `${out.files} files`);
  });

  // What waits for something to happen, past the second phase too: a finding's text once its
  // gate passed (lib/findings/found/), the endpoint's hub at the first push from another process
  // and its member side when another holds the port, and the tracer's parts when it first arms.
  // Each loads at its first use (the findings', endpoint's and tracer's tests exercise those paths).
  it('a quiet app that was sampled, scraped and served its page has not loaded what waits for something to happen', async () => {
    const r = await runNode(['--require', REGISTER, '-e', `${REPORT}
      const http = require('http');
      const get = (port, p) => new Promise((resolve, reject) => http.get({ host: '127.0.0.1', port, path: p }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); }).on('error', reject));
      const timer = setInterval(() => {}, 1000);
      setTimeout(async () => {
        const uvscope = require(${JSON.stringify(ROOT)});
        const agent = uvscope.getAgent();
        const { port } = await agent.server.ready;
        const codes = [await get(port, '/metrics'), await get(port, '/snapshot.json'), await get(port, '/history.json'), await get(port, '/')];
        const files = report().map((f) => f.file);
        const sample = agent.sampleNow();
        const mode = sample.points.find((p) => p.name === 'nodejs.eventloop.delay.mode').attributes['nodejs.eventloop.delay.mode'];
        // The agent's own DNS probe (a getaddrinfo on the pool) holds a DNS slot, so it makes the
        // model: it runs when the work probe waited, which a busy host can make happen here.
        const dnsWait = sample.points.find((p) => p.name === 'nodejs.uv.threadpool.queue_wait' && p.attributes['nodejs.uv.threadpool.queue'] === 'dns');
        const dnsProbed = Boolean((dnsWait && dnsWait.histogram.count > 0) || sample.details.threadpool.probes.dns.inFlightSeconds > 0);
        console.log(JSON.stringify({ codes, mode, files, dnsProbed }));
        clearInterval(timer);
        uvscope.stop();
      }, 700);
    `], { env: { UVSCOPE_EXPORTERS: 'prometheus', UVSCOPE_PROMETHEUS_PORT: '0', UVSCOPE_INTERVAL_MS: '100' } });
    assert.equal(r.code, 0, r.stderr);
    const { codes, mode, files, dnsProbed } = lastJson(r.stdout);
    assert.deepEqual(codes, [200, 200, 200, 200]);
    assert.ok(files.includes('lib/findings/engine.js') && files.includes('lib/findings/rules/cpu-starved.js'), 'the rules ran');
    assert.ok(files.includes('lib/endpoint/multiprocess/index.js'), 'the endpoint is up');
    const waiting = [
      /^lib\/findings\/found\//,
      /^lib\/endpoint\/multiprocess\/(hub|member)\.js$/,
      /^lib\/sources\/threadpool\/(jobs|routes|modes)\.js$/,
      // No lookup yet (its requests went to 127.0.0.1): the DNS sampler's model is not made
      // unless the agent's own DNS probe ran.
      ...(dnsProbed ? [] : [/^lib\/sources\/dns\/(names|slots)\.js$/]),
    ];
    assert.deepEqual(files.filter((f) => waiting.some((re) => re.test(f))), []);
    // the loop's delay is read from the sampler's own timer (its only mode)
    assert.equal(mode, 'timer');
    assert.ok(files.includes('lib/sources/eventloop-timer.js') && files.includes('lib/sources/eventloop-lateness.js'));
  });

  // The threadpool's work probe is an fs.access: crypto (OpenSSL and its modules, MiBs of RSS)
  // stays out of an app that never uses it. Run from a file: \`node -e\` loads crypto itself.
  it('an app that looks names up while sampled at 100 ms (the pool busy, its probes launched) loads no crypto', async () => {
    const dir = fs.mkdtempSync(path.join(require('os').tmpdir(), 'uvscope-preload-'));
    const app = path.join(dir, 'app.js');
    fs.writeFileSync(app, `
      const dns = require('dns');
      let lookups = 0;
      const more = () => dns.lookup('localhost', () => { lookups++; });
      const timer = setInterval(() => { for (let i = 0; i < 8; i++) more(); }, 20);
      setTimeout(() => {
        clearInterval(timer);
        const agent = require(${JSON.stringify(ROOT)}).getAgent();
        const work = agent.sampleNow().points.find((p) => p.name === 'nodejs.uv.threadpool.queue_wait' && p.attributes['nodejs.uv.threadpool.queue'] === 'work');
        console.log(JSON.stringify({ lookups, probes: work.histogram.count, crypto: process.moduleLoadList.includes('NativeModule crypto') }));
        require(${JSON.stringify(ROOT)}).stop();
      }, 1500);
    `);
    try {
      const r = await runNode(['--require', REGISTER, app], { env: { UVSCOPE_EXPORTERS: 'none', UVSCOPE_INTERVAL_MS: '100' } });
      assert.equal(r.code, 0, r.stderr);
      const out = lastJson(r.stdout);
      assert.ok(out.lookups > 100 && out.probes > 0, JSON.stringify(out));
      assert.equal(out.crypto, false, JSON.stringify(out));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a require hook installed after the preload (an APM tool\'s) still sees the packages and builtins uvscope loads later', async () => {
    // Wraps Module.prototype.require after uvscope's preload, as require-in-the-middle does.
    const r = await runNode(['--require', REGISTER, '-e', `
      const Module = require('module');
      const seen = new Set();
      const original = Module.prototype.require;
      Module.prototype.require = function (id) { seen.add(id); return original.apply(this, arguments); };
      setTimeout(() => {
        // v8 and http: required by the memory sampler and the endpoint, both loaded at the second phase.
        console.log(JSON.stringify({ v8: seen.has('v8'), http: seen.has('http') }));
        require(${JSON.stringify(ROOT)}).stop();
      }, 50);
    `], { env: { UVSCOPE_EXPORTERS: 'prometheus', UVSCOPE_PROMETHEUS_PORT: '0' } });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(lastJson(r.stdout), { v8: true, http: true });
  });

  it('a source listed through later() is not early, reads no setting and has the name it is listed under', () => {
    const dir = path.join(ROOT, 'lib', 'sources');
    const text = fs.readFileSync(path.join(dir, 'index.js'), 'utf8');
    const listed = [...text.matchAll(/later\('(\w+)', \(\) => require\('(\.\/[\w/]+)'\)\)/g)];
    assert.ok(listed.length >= 3, 'later() sources found');
    for (const [, name, file] of listed) {
      const { source } = require(path.join(dir, file));
      assert.equal(source.name, name);
      assert.ok(!source.early, `${name} is early: list it by its source`);
      assert.deepEqual(source.settings, [], `${name} reads settings: list it by its source`);
      const entry = SOURCES.find((s) => s.name === name);
      assert.strictEqual(entry.metrics, source.metrics);
      assert.equal(entry.early, false);
    }
  });
});
