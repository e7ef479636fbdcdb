'use strict';

const assert = require('node:assert/strict');
const { createAgentAddress } = require('../../exporters/datadog/address');
const { sampleRate } = require('../../exporters/datadog/lookups');
const { resolveOptions } = require('../../lib/agent/options');

describe('exporters/datadog: the Agent address, sampling, caller, settings', () => {
  it('looks a hostname up at most once per refresh interval, one lookup in flight, keeping the last good address', () => {
    const calls = [];
    const changes = [];
    const errors = [];
    const a = createAgentAddress({
      host: 'agent.test', refreshMs: 1000, lookup: (host, opts, cb) => calls.push(cb),
      onChange: (x) => changes.push(x.address), onError: (e) => errors.push(e.code),
    });
    for (let t = 0; t < 5000; t += 10) a.refresh(t); // 500 exports while the first lookup hangs
    assert.equal(calls.length, 1);
    calls[0](null, '10.0.0.1', 4);
    for (let t = 5000; t < 5990; t += 10) a.refresh(t); // within the interval: no lookup
    assert.equal(calls.length, 1);
    a.refresh(6000);
    assert.equal(calls.length, 2);
    calls[1](Object.assign(new Error('x'), { code: 'EAI_AGAIN' }));
    assert.equal(a.current.address, '10.0.0.1');
    a.refresh(7000);
    calls[2](null, '10.0.0.2', 4);
    assert.deepEqual(changes, ['10.0.0.1', '10.0.0.2']);
    assert.deepEqual(errors, ['EAI_AGAIN']);
  });

  it('never looks up an IP address', () => {
    let n = 0;
    const a = createAgentAddress({ host: '127.0.0.1', refreshMs: 1000, lookup: () => n++, onChange: () => {} });
    for (let t = 0; t < 100000; t += 1000) a.refresh(t);
    assert.equal(n, 0);
    assert.equal(a.current.address, '127.0.0.1');
  });

  it('sample rates keep about the budget and read well on the wire', () => {
    assert.equal(sampleRate(200, 200), 1);
    assert.equal(sampleRate(200, 3000), 0.066);
    assert.ok(sampleRate(200, 1e12) > 0);
  });

  it('reads the Datadog settings the way dd-trace does; an option given to start() wins; a bad value warns and falls back', async () => {
    const env = { DD_AGENT_HOST: 'agent.internal', DD_DOGSTATSD_HOST: 'dsd.internal', DD_DOGSTATSD_PORT: '9125', DD_TAGS: 'a:1 b:2', DD_SERVICE: 'api' };
    const o = resolveOptions({ datadog: { service: 'given' } }, env).datadog;
    assert.equal(o.host, 'dsd.internal');
    assert.equal(o.port, 9125);
    assert.deepEqual(o.tags, ['a:1', 'b:2']);
    assert.equal(o.service, 'given');
    assert.deepEqual(resolveOptions({}, { DD_DOGSTATSD_URL: 'unix:///var/run/datadog/dsd.socket' }).datadog.url, { protocol: 'uds', path: '/var/run/datadog/dsd.socket' });
    assert.deepEqual(resolveOptions({}, { DD_DOGSTATSD_URL: 'udp://[::1]:8126' }).datadog.url, { protocol: 'udp', host: '::1', port: 8126 });
    const warnings = [];
    const onWarning = (w) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      assert.equal(resolveOptions({}, { DD_DOGSTATSD_URL: 'tcp://agent:8125' }).datadog.url, undefined);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.removeListener('warning', onWarning);
    }
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /DD_DOGSTATSD_URL="tcp:\/\/agent:8125" is not valid: expected udp:\/\/host\[:port\], unix:\/\/\/path/);
  });
});
