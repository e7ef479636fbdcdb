'use strict';

const assert = require('node:assert/strict');
const { createOwnIo, isOwnRequest } = require('../../lib/core/own-io');

describe('own-io: the agent\'s own lookup and agents', () => {
  it('lookup calls the dns.lookup captured when the DNS sampler wrapped, and dns.lookup before that', () => {
    const calls = [];
    const dns = { lookup: (name, options, cb) => calls.push(['current', name]) };
    const io = createOwnIo({ dns });
    io.lookup('a.test', {}, () => {});
    io.captureLookup((name) => calls.push(['captured', name]));
    dns.lookup = (name) => calls.push(['wrapped', name]);
    io.lookup('b.test', {}, () => {});
    assert.deepEqual(calls, [['current', 'a.test'], ['captured', 'b.test']]);
  });

  it('lookupService calls the DNS sampler\'s own lookupService once captured, dns.lookupService before that', () => {
    const calls = [];
    const dns = { lookup: () => {}, lookupService: (address, port) => calls.push(['current', address, port]) };
    const io = createOwnIo({ dns });
    io.lookupService('127.0.0.1', 0, () => {});
    io.captureLookup(() => {}, (address, port) => calls.push(['captured', address, port]));
    io.lookupService('127.0.0.2', 0, () => {});
    assert.deepEqual(calls, [['current', '127.0.0.1', 0], ['captured', '127.0.0.2', 0]]);
  });

  it('its agents are marked as uvscope\'s own and connect with its lookup', () => {
    const io = createOwnIo();
    const agent = io.createAgent('http:');
    assert.equal(agent.options.lookup, io.lookup);
    assert.equal(isOwnRequest({ agent }), true);
    assert.equal(isOwnRequest({ agent: new (require('http').Agent)() }), false);
    agent.destroy();
  });
});

describe('own-io: withoutTracing keeps uvscope\'s own I/O out of the app\'s traces', () => {
  const { withoutTracing } = require('../../lib/core/own-io');
  const api = require('@opentelemetry/api');
  const { isTracingSuppressed } = require('@opentelemetry/core');
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');

  it('with no OpenTelemetry context manager registered: runs fn as is, its result and its exceptions its own', () => {
    assert.equal(withoutTracing(() => 42), 42);
    assert.throws(() => withoutTracing(() => {
      throw new Error('own');
    }), /own/);
  });

  describe('with the app\'s context manager registered', () => {
    before(() => api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable()));
    after(() => api.context.disable());

    it('fn and what it starts run with tracing suppressed (what the SDK\'s tracers check); the app\'s context before and after is untouched', async () => {
      const seen = {};
      const key = api.createContextKey('app');
      await api.context.with(api.context.active().setValue(key, 'app'), async () => {
        seen.before = isTracingSuppressed(api.context.active());
        const later = withoutTracing(() => {
          seen.inside = isTracingSuppressed(api.context.active());
          seen.appValue = api.context.active().getValue(key);
          return new Promise((resolve) => setImmediate(() => resolve(isTracingSuppressed(api.context.active()))));
        });
        seen.after = isTracingSuppressed(api.context.active());
        seen.callback = await later;
      });
      assert.deepEqual(seen, { before: false, inside: true, appValue: 'app', after: false, callback: true });
      assert.equal(withoutTracing(() => 'result'), 'result');
    });
  });
});
