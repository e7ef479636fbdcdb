'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const { ROOT, runNode, lastJson } = require('../helpers/child');

describe('agent', () => {
  it('an exception inside a sampler is counted, reported once, and sampling goes on', async () => {
    const r = await runNode(['-e', `
      const uvscope = require(${JSON.stringify(ROOT)});
      const agent = uvscope.start({ exporters: 'none', intervalMs: 3600000 });
      agent.samplers.unshift({ name: 'boom', sample() { throw new Error('sampler exploded'); }, close() {} });
      let snap;
      for (let i = 0; i < 3; i++) snap = agent.sampleNow();
      const errors = snap.points.find((p) => p.name === 'uvscope.errors' && p.attributes['uvscope.component'] === 'sampler:boom');
      const size = snap.points.find((p) => p.name === 'nodejs.uv.threadpool.size');
      console.log(JSON.stringify({ errors: errors.value, size: size.value, frozen: Object.isFrozen(snap) && Object.isFrozen(snap.points) }));
      uvscope.stop();
    `]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(lastJson(r.stdout), { errors: 3, size: 4, frozen: true });
    const warnings = r.stderr.split('\n').filter((l) => l.includes('UVSCOPE_INTERNAL_ERROR'));
    assert.equal(warnings.length, 1, r.stderr);
    assert.match(warnings[0], /sampler:boom failed.*sampler exploded/);
  });

  it('each sample calls sample(), then every details(), then every endInterval(); details() alone ends no interval', async () => {
    const r = await runNode(['-e', `
      const uvscope = require(${JSON.stringify(ROOT)});
      const agent = uvscope.start({ exporters: 'none', intervalMs: 3600000 });
      const calls = [];
      for (const name of ['a', 'b']) {
        agent.samplers.push({
          name,
          sample() { calls.push(name + '.sample'); return []; },
          details() { calls.push(name + '.details'); return { name }; },
          endInterval() { calls.push(name + '.endInterval'); },
          close() {},
        });
      }
      require('dns').lookup('localhost', () => {
        const dns = agent.samplers.find((s) => s.name === 'dns');
        const twice = [dns.details().hosts[0].lookups, dns.details().hosts[0].lookups];
        // A snapshot's per-hostname DNS figures are updated in place by the next sample: read
        // before it (lib/snapshot/snapshot.js).
        const first = agent.sampleNow();
        const firstLookups = first.details.dns.hosts[0].lookups;
        const second = agent.sampleNow();
        console.log(JSON.stringify({
          calls, twice, details: first.details.a,
          intervals: [firstLookups, second.details.dns.hosts[0].lookups],
          total: second.details.dns.hosts[0].totalLookups,
        }));
        uvscope.stop();
      });
    `]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(lastJson(r.stdout), {
      calls: ['a.sample', 'b.sample', 'a.details', 'b.details', 'a.endInterval', 'b.endInterval',
        'a.sample', 'b.sample', 'a.details', 'b.details', 'a.endInterval', 'b.endInterval'],
      twice: [1, 1],
      details: { name: 'a' },
      intervals: [1, 0],
      total: 1,
    });
  });

  it('start() never throws into the app, even when everything it touches is broken', async () => {
    const r = await runNode(['-e', `
      process.getActiveResourcesInfo = () => { throw new Error('no resources'); };
      const uvscope = require(${JSON.stringify(ROOT)});
      const agent = uvscope.start({ exporters: 'none', intervalMs: 3600000, prometheus: { registry: 42 } });
      agent.sampleNow();
      console.log(JSON.stringify({ ok: true }));
      uvscope.stop();
    `]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(lastJson(r.stdout), { ok: true });
    assert.match(r.stderr, /options.prometheus.registry=42 is not valid: expected a Registry of prom-client 15 or @prometheus-io\/client 0.16/);
    assert.match(r.stderr, /sampler:resources failed/);
  });

  it('stop() restores dns.lookup and dns.promises.lookup and lets the process exit', async () => {
    const r = await runNode(['-e', `
      const dns = require('dns');
      const original = dns.lookup, originalP = dns.promises.lookup;
      const uvscope = require(${JSON.stringify(ROOT)});
      uvscope.start({ prometheus: { port: 0 } });
      const wrapped = dns.lookup !== original && dns.promises.lookup !== originalP;
      uvscope.stop().then(() => console.log(JSON.stringify({ wrapped, restored: dns.lookup === original && dns.promises.lookup === originalP })));
    `]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(lastJson(r.stdout), { wrapped: true, restored: true });
  });

  it('with the agent preloaded, util.promisify(dns.lookup) and { all: true } behave as without it', async () => {
    const script = `
      const dns = require('dns');
      Promise.all([
        require('util').promisify(dns.lookup)('localhost', { family: 4 }),
        require('util').promisify(dns.lookup)('localhost', { all: true, family: 4 }),
        new Promise((r) => dns.lookup('localhost', { all: true, family: 4 }, (e, a) => r(a))),
        dns.promises.lookup('localhost', { family: 4 }),
      ]).then((v) => console.log(JSON.stringify(v)));
    `;
    const without = await runNode(['-e', script]);
    const withAgent = await runNode(['--require', path.join(ROOT, 'register.js'), '-e', script], { env: { UVSCOPE_EXPORTERS: 'none' } });
    assert.equal(withAgent.code, 0, withAgent.stderr);
    assert.deepEqual(lastJson(withAgent.stdout), lastJson(without.stdout));
    assert.deepEqual(lastJson(without.stdout)[0], { address: '127.0.0.1', family: 4 });
  });
});
