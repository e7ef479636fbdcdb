'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const { withDnsServer } = require('../helpers/dns-server');
const { runInNamespace, resolvConf } = require('../helpers/namespace');
const { FIXTURES, runNode, lastJson } = require('../helpers/child');

const APP = path.join(FIXTURES, 'connections-app.js');

describe('samplers/connections', function () {
  it('counts new and reused connections as the server sees them: keep-alive, no keep-alive, fetch', async () => {
    const r = await runNode([APP], { env: { FIXTURE_PLAN: JSON.stringify({ keepAlive: 5, noKeepAlive: 3, fetch: 3 }) } });
    assert.equal(r.code, 0, r.stderr);
    const { counts, requests, tcp } = lastJson(r.stdout);
    // Ground truth: the server's own 'connection' events during each step.
    assert.equal(counts.keepAlive.connections, 1);
    assert.equal(counts.noKeepAlive.connections, 3);
    assert.equal(requests['http:false'], counts.keepAlive.connections + counts.noKeepAlive.connections);
    assert.equal(requests['http:true'], 5 - counts.keepAlive.connections);
    assert.equal(requests['fetch:false'], counts.fetch.connections);
    assert.equal((requests['fetch:true'] || 0) + requests['fetch:false'], 3);
    // Every new TCP connection was timed; to 127.0.0.1 there is no lookup, so no dns phase.
    assert.equal(tcp.count, 1 + 3 + counts.fetch.connections);
    assert.ok(tcp.sum / tcp.count < 0.05, `loopback connect ${tcp.sum / tcp.count} s`);
  });

  describe('against a DNS server the test controls', function () {
    const server = withDnsServer({ address: '127.0.0.2', names: { 'conn.slow.test': { a: '127.0.0.1', delayMs: 150 } } });

    it('the dns phase of each connect is the time the DNS server took to answer; the tcp phase the rest', async () => {
      const r = await runInNamespace({
        resolvConf: resolvConf({ nameserver: '127.0.0.2' }),
        args: [APP],
        env: { FIXTURE_PLAN: JSON.stringify({ noKeepAlive: 3, host: 'conn.slow.test' }) },
      });
      assert.equal(r.code, 0, r.stderr);
      const { counts, dns, tcp } = lastJson(r.stdout);
      // Ground truth from the server: per lookup, first query in to last answer out.
      const spans = [];
      const qs = server.queries.filter((q) => q.name === 'conn.slow.test');
      for (let i = 0; i < qs.length; i += 2) spans.push((Math.max(qs[i].answeredAt, qs[i + 1].answeredAt) - Math.min(qs[i].at, qs[i + 1].at)) / 1000);
      assert.equal(spans.length, 3, 'A and AAAA per lookup');
      const truth = spans.reduce((a, b) => a + b, 0);
      assert.equal(dns.count, 3);
      assert.ok(dns.sum >= truth - 0.003 && dns.sum <= truth + 0.03, `dns phase ${dns.sum} s, server ${truth} s`);
      assert.equal(tcp.count, 3);
      assert.ok(tcp.sum < 0.05, `tcp phase ${tcp.sum} s on loopback`);
      assert.ok(dns.sum + tcp.sum <= counts.noKeepAlive.seconds, 'within what the app measured');
    });
  });
});
