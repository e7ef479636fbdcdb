'use strict';

const assert = require('node:assert/strict');
const { parseResolvConf, parseHosts, searchExpanded } = require('../../lib/sources/dns/resolver');
const { resolverTimeouts } = require('../../lib/sources/dns/names');

describe('resolver configuration', () => {
  it('parses resolv.conf as glibc does: defaults, caps, the last search wins, RES_OPTIONS and LOCALDOMAIN', () => {
    assert.deepEqual(parseResolvConf('nameserver 10.0.0.1\n'), { nameservers: ['10.0.0.1'], search: [], timeout: 5, attempts: 2, ndots: 1, options: [] });
    const conf = parseResolvConf([
      '# comment', 'nameserver 10.0.0.1', 'nameserver 10.0.0.2', 'nameserver 10.0.0.3', 'nameserver 10.0.0.4',
      'domain example.org', 'search default.svc.cluster.local svc.cluster.local cluster.local',
      'options ndots:5 timeout:60 attempts:3 single-request-reopen rotate',
    ].join('\n'), { RES_OPTIONS: 'attempts:1' });
    assert.deepEqual(conf.nameservers, ['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    assert.deepEqual(conf.search, ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local']);
    assert.equal(conf.ndots, 5);
    assert.equal(conf.timeout, 30, 'capped at 30 like glibc');
    assert.equal(conf.attempts, 1, 'RES_OPTIONS wins');
    assert.deepEqual(conf.options, ['single-request-reopen', 'rotate']);
    assert.deepEqual(parseResolvConf('search a.test\n', { LOCALDOMAIN: 'b.test c.test' }).search, ['b.test', 'c.test']);
  });

  it('knows which names are search-expanded', () => {
    const conf = { ...parseResolvConf('search svc.cluster.local\noptions ndots:5\n'), hosts: parseHosts('127.0.0.1 localhost db # x\n') };
    assert.equal(searchExpanded('api.example.com', conf), true);
    assert.equal(searchExpanded('api.example.com.', conf), false, 'a trailing dot is absolute');
    assert.equal(searchExpanded('localhost', conf), false, '/etc/hosts answers it');
    assert.equal(searchExpanded('a.b.c.d.e.f', conf), false, 'enough dots');
    assert.equal(searchExpanded('api', { ...conf, search: [] }), false, 'no search list');
  });

  it('counts resolver timeouts from a lookup duration', () => {
    assert.equal(resolverTimeouts(0.3, 5), 0);
    assert.equal(resolverTimeouts(5.004, 5), 1);
    assert.equal(resolverTimeouts(10.01, 5), 2);
    assert.equal(resolverTimeouts(7, 5), 0);
    assert.equal(resolverTimeouts(1.003, 1), 1);
  });
});
