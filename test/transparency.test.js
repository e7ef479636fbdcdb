'use strict';

// The DNS wrappers are exactly transparent (issue 11): every case of
// test/fixtures/transparency-cases.js runs in a child without the agent and in one with it, against
// the same DNS server, and what the app saw must be identical, case by case.

const assert = require('node:assert/strict');
const path = require('node:path');
const { createDnsServer } = require('./helpers/dns-server');
const { requireNamespace, runInNamespace, resolvConf } = require('./helpers/namespace');
const { REGISTER, FIXTURES, cleanEnv, lastJson } = require('./helpers/child');

const CASES = path.join(FIXTURES, 'transparency-cases.js');
const NAMESERVER = '127.0.15.2';
const HOSTS = '127.0.0.1 localhost\n::1 localhost ip6-localhost\n127.0.0.7 hosts.h11.test\n';

function run({ agent, env = {} }) {
  return runInNamespace({
    resolvConf: resolvConf({ nameserver: NAMESERVER }),
    hosts: HOSTS,
    args: agent ? ['--require', REGISTER, CASES] : [CASES],
    env: cleanEnv({ UVSCOPE_PROMETHEUS_PORT: '0', ...(agent ? { FIXTURE_WITH_AGENT: '1' } : {}), ...env }),
    timeoutMs: 30000,
  });
}

describe('transparency: the DNS wrappers change nothing the app can see', function () {
  this.timeout(60000);
  let dnsServer;
  let without;
  let withAgent;

  before(async function () {
    requireNamespace(this);
    dnsServer = await createDnsServer({ address: NAMESERVER, port: 53 });
    dnsServer.setName('a.h11.test', { a: '127.0.0.1' });
    dnsServer.setName('both.h11.test', { a: ['127.0.0.1', '127.0.0.3'], aaaa: ['::1'] });
    // Anything else (nx.h11.test) is NXDOMAIN.
    const [a, b] = await Promise.all([run({ agent: false }), run({ agent: true })]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    without = lastJson(a.stdout);
    withAgent = lastJson(b.stdout);
    withAgent.stderr = b.stderr;
  });
  after(async () => {
    if (dnsServer) await dnsServer.close();
  });

  it('the agent was there and timed the lookups (so the comparison means something), without a warning', () => {
    assert.equal(without.agentLookups, null);
    assert.ok(withAgent.agentLookups['a.h11.test'] > 5, JSON.stringify(withAgent.agentLookups));
    assert.ok(withAgent.agentLookups['nx.h11.test'] >= 4, JSON.stringify(withAgent.agentLookups));
    assert.ok(withAgent.agentLookups['both.h11.test'] >= 4, JSON.stringify(withAgent.agentLookups));
    assert.doesNotMatch(withAgent.stderr, /UVSCOPE_/);
  });

  // One test per case, named after it: the case list is read from the fixture's own output.
  it('every case gives the same outcome with and without the agent', () => {
    const names = Object.keys(without.cases);
    assert.ok(names.length >= 30, `${names.length} cases`);
    assert.deepEqual(Object.keys(withAgent.cases), names);
    const differing = names.filter((n) => JSON.stringify(without.cases[n]) !== JSON.stringify(withAgent.cases[n]));
    for (const n of differing) assert.deepEqual(withAgent.cases[n], without.cases[n], `case "${n}"`);
    for (const n of names) assert.equal(without.cases[n].caseFailed, undefined, `case "${n}" itself failed: ${JSON.stringify(without.cases[n])}`);
  });

  it('the cases do test something: lookups answered, NXDOMAIN seen, sync throws thrown, one unhandled rejection', () => {
    const c = without.cases;
    assert.equal(c['callback: an A record'].address, '127.0.0.1');
    assert.equal(c['callback: NXDOMAIN'].err.code, 'ENOTFOUND');
    assert.equal(c['callback: all: true, both families'].address.length, 3);
    assert.equal(c['sync throw: family 7'].threw.code, 'ERR_INVALID_ARG_VALUE');
    assert.equal(c['promises: sync throw for a number'].threw.code, 'ERR_INVALID_ARG_TYPE');
    assert.equal(c['a failing dns.promises.lookup nobody awaits: one unhandledRejection with its error'].seen.length, 1);
    assert.deepEqual(c['a failing lookup handled later: rejectionHandled'].events, ['unhandledRejection', 'rejectionHandled']);
    assert.deepEqual(c['util.promisify(dns.lookup)'].value, { address: '127.0.0.1', family: 4 });
    assert.equal(c['callback: a name from /etc/hosts'].address, '127.0.0.7');
    assert.equal(c['a library that replaces dns.lookup after the agent'].got, 'hi');
    assert.equal(c['the functions look the same'].promises.length, 2);
  });

  it('a failing dns.promises.lookup nobody awaits, nothing listening: Node exits with the error, as without the agent', async () => {
    const [a, b] = await Promise.all([run({ agent: false, env: { FIXTURE_UNHANDLED: '1' } }), run({ agent: true, env: { FIXTURE_UNHANDLED: '1' } })]);
    assert.equal(a.code, 1, a.stderr);
    assert.equal(b.code, a.code, b.stderr);
    for (const r of [a, b]) assert.match(r.stderr, /ENOTFOUND nx\.h11\.test/);
  });
});
