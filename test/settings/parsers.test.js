'use strict';

const assert = require('node:assert/strict');
const p = require('../../lib/settings/parsers');

describe('settings/parsers: one parser per type', () => {
  it('booleans: true/false, 1/0, yes/no, on/off in any case, or a boolean; anything else is bad', () => {
    for (const s of ['1', 'true', 'YES', ' on ', true]) assert.equal(p.parseBoolean(s), true, String(s));
    for (const s of ['0', 'False', 'no', 'OFF', false]) assert.equal(p.parseBoolean(s), false, String(s));
    for (const s of ['', 'y', '2', 'enabled', null]) assert.equal(p.parseBoolean(s), undefined, String(s));
  });

  it('BOOLEAN, what a boolean row says it accepts, names the words parseBoolean reads, true/false in pairs', () => {
    assert.equal(p.BOOLEAN, 'true/false, 1/0, yes/no, on/off');
    for (const pair of p.BOOLEAN.split(', ')) {
      const [t, f] = pair.split('/');
      assert.equal(p.parseBoolean(t), true, t);
      assert.equal(p.parseBoolean(f), false, f);
    }
  });

  it('auto or a boolean', () => {
    assert.equal(p.parseAutoBoolean(' Auto '), 'auto');
    assert.equal(p.parseAutoBoolean('yes'), true);
    assert.equal(p.parseAutoBoolean(false), false);
    assert.equal(p.parseAutoBoolean('sometimes'), undefined);
  });

  it('integers in a range: decimal digits only', () => {
    const port = p.parseInteger(0, 65535);
    assert.equal(port(' 8125 '), 8125);
    assert.equal(port(0), 0);
    for (const s of ['65536', '-1', '1e3', '0x10', '80.5', '', 'http']) assert.equal(port(s), undefined, s);
  });

  it('one of a list, with aliases; a list of words without repeats, or none', () => {
    const mode = p.parseOneOf(['auto', 'on', 'off'], { true: 'on' });
    assert.equal(mode(' ON '), 'on');
    assert.equal(mode('true'), 'on');
    assert.equal(mode('constructor'), undefined, 'an alias is an own key, not an Object.prototype member');
    const list = p.parseList(['a', 'b']);
    assert.deepEqual(list(' B , a , b '), ['b', 'a']);
    assert.deepEqual(list(['a']), ['a']);
    assert.deepEqual(list('none'), []);
    assert.equal(list('a,c'), undefined);
    assert.equal(list(' , '), undefined);
  });

  it('hosts and names', () => {
    assert.equal(p.parseHost('[::1]'), '::1');
    assert.equal(p.parseHost('agent.internal'), 'agent.internal');
    assert.equal(p.parseHost('a b'), undefined);
    assert.equal(p.parseName(' api '), 'api');
    assert.equal(p.parseName(''), undefined);
    assert.equal(p.parseName('x'.repeat(201)), undefined);
  });

  it('DD_DOGSTATSD_URL as dd-trace reads it (moved from exporters/datadog/settings.js)', () => {
    assert.deepEqual(p.parseDogStatsdUrl('udp://agent'), { protocol: 'udp', host: 'agent', port: 8125 });
    assert.deepEqual(p.parseDogStatsdUrl('udp://[::1]:8126'), { protocol: 'udp', host: '::1', port: 8126 });
    assert.deepEqual(p.parseDogStatsdUrl('unixgram:///var/run/dsd.socket'), { protocol: 'uds', path: '/var/run/dsd.socket' });
    for (const s of ['tcp://agent:8125', 'udp://agent:0', 'udp://agent:70000', 'udp://[nope]:1', 'unix://relative']) {
      assert.equal(p.parseDogStatsdUrl(s), undefined, s);
    }
  });

  it('DD_TAGS: commas or spaces, an array, or an object; | and # are bad', () => {
    assert.deepEqual(p.parseTags('a:1, b:2'), ['a:1', 'b:2']);
    assert.deepEqual(p.parseTags('a:1 b:2'), ['a:1', 'b:2']);
    assert.deepEqual(p.parseTags({ team: 'dns' }), ['team:dns']);
    assert.deepEqual(p.parseTags(['x']), ['x']);
    assert.equal(p.parseTags('a|b'), undefined);
    assert.equal(p.parseTags(':novalue'), undefined);
  });

  it('an object with the given methods', () => {
    const client = p.parseObjectWith(['gauge', 'increment']);
    const ok = { gauge() {}, increment() {} };
    assert.equal(client(ok), ok);
    assert.equal(client({ gauge() {} }), undefined);
    assert.equal(client('statsd'), undefined);
  });
});
