'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { withDnsServer } = require('../helpers/dns-server');
const { runInNamespace, resolvConf } = require('../helpers/namespace');
const { FIXTURES, runNode, lastJson } = require('../helpers/child');

const APP = path.join(FIXTURES, 'connections-app.js');

/** A self-signed certificate for 127.0.0.1 (openssl), or null when openssl is missing. */
function selfSigned() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-tls-'));
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
  if (r.status !== 0) {
    fs.rmSync(dir, { recursive: true, force: true });
    return null;
  }
  return { dir, key, cert };
}

describe('samplers/connections', function () {
  let tls;
  before(() => {
    tls = selfSigned();
  });
  after(() => {
    if (tls) fs.rmSync(tls.dir, { recursive: true, force: true });
  });

  it('counts a request as new only when its socket was created for it, as the server counts connections: every client kind, queued requests included', async function () {
    if (!tls && process.env.CI) throw new Error('openssl is required in CI for the https case');
    const steps = [
      // The reproduction: 16 clients on one keep-alive agent with 4 sockets, the next
      // request sent from the previous response's 'end': 12 requests at a time wait for a socket.
      { client: 'keepAlive', requests: 400, concurrency: 16, maxSockets: 4 },
      { client: 'keepAlive', requests: 5 },
      { client: 'noKeepAlive', requests: 6, concurrency: 2 },
      { client: 'custom', requests: 60, concurrency: 8, maxSockets: 2 },
      // fetch sent one after another: undici opens a second connection for the second request
      // (the first is not yet back in its pool when the body has been read); the server counts 2.
      { client: 'fetch', requests: 10 },
      { client: 'fetch', requests: 60, concurrency: 6 },
      { client: 'undici', requests: 60, concurrency: 8, maxSockets: 3 },
      ...(tls ? [{ client: 'https', requests: 60, concurrency: 8, maxSockets: 2 }] : []),
    ];
    const r = await runNode([APP], { env: { FIXTURE_PLAN: JSON.stringify({ steps, tls }) } });
    assert.equal(r.code, 0, r.stderr);
    const { counts, requests } = lastJson(r.stdout);
    for (const c of counts) {
      const what = `${c.client} x${c.concurrency || 1}: the server counted ${c.connections} connection(s)`;
      // Ground truth: the server's own connection events during the step.
      assert.equal(c.agent.newConnections, c.connections, `${what}, uvscope ${c.agent.newConnections} new`);
      assert.equal(c.agent.requests, c.requests, what);
    }
    // The agent's sockets per step, as the server saw them: queued requests reuse them.
    assert.equal(counts[0].connections, 4);
    assert.equal(counts[1].connections, 1);
    assert.equal(counts[2].connections, 6);
    assert.equal(counts[3].connections, 2);
    assert.ok(counts[6].connections <= 3);
    if (tls) assert.equal(counts[7].connections, 2);
    const sum = (client, reused) => counts.filter((c) => ['fetch', 'undici'].includes(c.client) === (client === 'fetch')).reduce((a, c) => a + (reused ? c.requests - c.connections : c.connections), 0);
    assert.equal(requests['http:false'], sum('http', false));
    assert.equal(requests['http:true'], sum('http', true));
    assert.equal(requests['fetch:false'], sum('fetch', false));
    assert.equal(requests['fetch:true'], sum('fetch', true));
  });

  it('times every new TCP connection (no dns phase to an IP address)', async () => {
    const r = await runNode([APP], { env: { FIXTURE_PLAN: JSON.stringify({ steps: [{ client: 'keepAlive', requests: 5 }, { client: 'noKeepAlive', requests: 3 }, { client: 'fetch', requests: 3 }] }) } });
    assert.equal(r.code, 0, r.stderr);
    const { counts, tcp, dns } = lastJson(r.stdout);
    assert.equal(tcp.count, counts.reduce((a, c) => a + c.connections, 0));
    assert.equal(dns, null);
    assert.ok(tcp.sum / tcp.count < 0.05, `loopback connect ${tcp.sum / tcp.count} s`);
  });

  it('lists each interval the hosts that had a request in it, with their own counts, at most 100 of them', async () => {
    const http = require('http');
    const { createConnectionsSampler } = require('../../lib/sources/connections');
    const server = http.createServer((req, res) => res.end('ok'));
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = /** @type {import('net').AddressInfo} */ (server.address());
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sampler = createConnectionsSampler();
    // A name the test's own lookup answers (no DNS): the sampler keys a host by the request's host.
    const get = (host, agent = keepAlive) => new Promise((resolve, reject) => {
      http.get({ host, port, agent, lookup: (name, opts, cb) => (opts && opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)) }, (res) => res.resume().on('end', resolve)).on('error', reject);
    });
    const hosts = () => sampler.details().hosts.map((h) => `${h.host}:${h.requests}/${h.newConnections}`).sort();
    try {
      for (let i = 0; i < 3; i++) await get('a.conn.test');
      await get('b.conn.test');
      const first = sampler.details();
      assert.deepEqual(hosts(), ['a.conn.test:3/1', 'b.conn.test:1/1']);
      sampler.endInterval();
      // What an interval's details() gave stays as it was: a copy, not the sampler's figures.
      assert.deepEqual(first.hosts.map((h) => h.requests), [3, 1]);
      assert.equal(first.requests, 4);
      await get('b.conn.test');
      await get('b.conn.test');
      assert.deepEqual(hosts(), ['b.conn.test:2/0'], 'a host without a request in the interval is not listed');
      assert.equal(sampler.details().requests, 2);
      sampler.endInterval();
      assert.deepEqual(hosts(), []);
      sampler.endInterval();
      await get('a.conn.test');
      assert.deepEqual(hosts(), ['a.conn.test:1/0'], 'counted afresh on its keep-alive socket');
      sampler.endInterval();
      // The bound is on the hosts of one interval: 101 hosts, 100 listed (the requests all counted);
      // the next interval's new host is listed although the last interval's hundred were.
      const noKeepAlive = new http.Agent({ keepAlive: false });
      for (let i = 0; i <= 100; i++) await get(`h${i}.conn.test`, noKeepAlive);
      assert.equal(sampler.details().hosts.length, 100);
      assert.equal(sampler.details().requests, 101);
      sampler.endInterval();
      await get('late.conn.test', noKeepAlive);
      assert.deepEqual(hosts(), ['late.conn.test:1/1']);
    } finally {
      sampler.close();
      keepAlive.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  describe('against a DNS server the test controls', function () {
    const server = withDnsServer({ address: '127.0.14.1', names: { 'conn.slow.test': { a: '127.0.0.1', delayMs: 150 } } });

    it('the dns phase of each connect is the time the DNS server took to answer; the tcp phase the rest', async () => {
      const r = await runInNamespace({
        resolvConf: resolvConf({ nameserver: '127.0.14.1' }),
        args: [APP],
        env: { FIXTURE_PLAN: JSON.stringify({ steps: [{ client: 'noKeepAlive', requests: 3, host: 'conn.slow.test' }] }) },
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
      // Beyond the server's part: glibc's own work on a pool thread and the callback's wait for the
      // loop, 12-19 ms over the three lookups here (Node 24), 30-44 ms at the tail of a CI run.
      assert.ok(dns.sum >= truth - 0.003 && dns.sum <= truth + 0.06, `dns phase ${dns.sum} s, server ${truth} s`);
      assert.equal(tcp.count, 3);
      assert.ok(tcp.sum < 0.05, `tcp phase ${tcp.sum} s on loopback`);
      assert.ok(dns.sum + tcp.sum <= counts[0].seconds, 'within what the app measured');
    });
  });
});
