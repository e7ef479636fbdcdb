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
