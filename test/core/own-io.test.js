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

  it('its agents are marked as uvscope\'s own and connect with its lookup', () => {
    const io = createOwnIo();
    const agent = io.createAgent('http:');
    assert.equal(agent.options.lookup, io.lookup);
    assert.equal(isOwnRequest({ agent }), true);
    assert.equal(isOwnRequest({ agent: new (require('http').Agent)() }), false);
    agent.destroy();
  });
});
