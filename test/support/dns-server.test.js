'use strict';

const assert = require('node:assert/strict');
const dgram = require('node:dgram');
const fs = require('node:fs');
const net = require('node:net');
const packet = require('dns-packet');
const { createDnsServer } = require('../../support/dns-server');
const { withDnsServer } = require('../helpers/dns-server');
const {
  namespaceSupport,
  resolvConf,
  spawnInNamespace,
  runInNamespace,
} = require('../helpers/namespace');

// Child program: runs dns.lookup() for each op in argv[1] (sequentially) and
// prints one JSON line with durations and results/errors.
const LOOKUP_CHILD = `
const dns = require('dns');
const { performance } = require('perf_hooks');
const ops = JSON.parse(process.argv[1]);
const out = [];
(async () => {
  for (const op of ops) {
    const t0 = performance.now();
    const r = await new Promise((resolve) => {
      dns.lookup(op.name, op.options || {}, (err, address, family) => {
        resolve(err ? { code: err.code, errno: err.errno, syscall: err.syscall } : { address, family });
      });
    });
    out.push({ name: op.name, ms: performance.now() - t0, ...r });
  }
  process.stdout.write(JSON.stringify(out));
})();
`;

async function lookupInNamespace(ops, rc, extra = {}) {
  const r = await runInNamespace({
    resolvConf: rc,
    args: ['-e', LOOKUP_CHILD, JSON.stringify(ops)],
    timeoutMs: 15000,
    ...extra,
  });
  assert.equal(r.code, 0, `child failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function summary(server) {
  return server.queries.map((q) => `${q.type}${q.dropped ? ':dropped' : ''}`);
}

// Minimal stub-resolver for in-process checks that need no namespace.
function udpClient(address, port) {
  const sock = dgram.createSocket('udp4');
  const waiting = new Map();
  sock.on('message', (msg) => {
    let res;
    try { res = packet.decode(msg); } catch { return; }
    const w = waiting.get(res.id);
    if (w) { waiting.delete(res.id); w(res); }
  });
  return {
    query(id, name, type = 'A') {
      return new Promise((resolve) => {
        waiting.set(id, resolve);
        sock.send(packet.encode({ type: 'query', id, flags: packet.RECURSION_DESIRED, questions: [{ type, name }] }), port, address);
      });
    },
    raw(buf) { sock.send(buf, port, address); },
    close() { sock.close(); },
  };
}

describe('test helper: dns-server (in process)', function () {
  this.timeout(5000);
  let server;
  let client;

  before(async function () {
    // Ephemeral port on another loopback address: needs neither root nor port 53.
    server = await createDnsServer({ address: '127.0.0.3', port: 0 });
    client = udpClient(server.address, server.port);
  });
  after(async function () {
    if (client) client.close();
    if (server) await server.close();
  });
  beforeEach(function () {
    server.reset();
  });

  it('answers A by default, AAAA with NOERROR/no data, unknown names with NXDOMAIN', async function () {
    server.setName('Plain.Test.', {});
    const a = await client.query(1, 'plain.test', 'A');
    assert.equal(a.rcode, 'NOERROR');
    assert.deepEqual(a.answers.map((x) => x.data), ['127.0.0.1']);
    const aaaa = await client.query(2, 'PLAIN.test.', 'AAAA');
    assert.equal(aaaa.rcode, 'NOERROR');
    assert.equal(aaaa.answers.length, 0);
    const nx = await client.query(3, 'nobody.test', 'A');
    assert.equal(nx.rcode, 'NXDOMAIN');
    assert.equal(server.count('plain.test'), 2);
    assert.equal(server.count('PLAIN.TEST.', 'AAAA'), 1);
    assert.equal(server.count('nobody.test', 'A'), 1);
  });

  it('matches wildcard subdomains, but not the bare suffix', async function () {
    server.setName('*.wolt.test', { a: '127.0.0.7', aaaa: '::1' });
    const deep = await client.query(10, 'A.b.Wolt.test', 'A');
    assert.deepEqual(deep.answers.map((x) => x.data), ['127.0.0.7']);
    const six = await client.query(11, 'x.wolt.test', 'AAAA');
    assert.deepEqual(six.answers.map((x) => x.data), ['::1']);
    const bare = await client.query(12, 'wolt.test', 'A');
    assert.equal(bare.rcode, 'NXDOMAIN');
  });

  it('answers thousands of concurrent queries and ignores malformed packets', async function () {
    server.setName('burst.test', { a: '127.0.0.9' });
    client.raw(Buffer.from('not a dns packet'));
    client.raw(Buffer.alloc(3));
    const n = 3000;
    const replies = await Promise.all(Array.from({ length: n }, (_, i) => client.query(1000 + i, 'burst.test')));
    assert.equal(replies.length, n);
    assert.ok(replies.every((r) => r.answers[0].data === '127.0.0.9'));
    assert.equal(server.count('burst.test', 'A'), n);
  });

  it('slowEvery: every n-th query of a name is answered after slowDelayMs, the rest after delayMs', async function () {
    server.setName('periodic.test', { delayMs: 0, slowEvery: 3, slowDelayMs: 150 });
    const times = [];
    for (let i = 1; i <= 6; i++) {
      const t0 = Date.now();
      await client.query(100 + i, 'periodic.test', 'A');
      times.push(Date.now() - t0);
    }
    const q = server.queries.filter((x) => x.name === 'periodic.test');
    assert.deepEqual(q.map((x) => x.slow), [false, false, true, false, false, true]);
    assert.ok(times[2] >= 140 && times[5] >= 140, times.join());
    assert.ok(q.filter((x) => !x.slow).every((x) => x.answeredAt - x.at < 100));
  });

  it('answers over TCP on the same port', async function () {
    server.setName('tcp.test', { a: '127.0.0.8' });
    const reply = await new Promise((resolve, reject) => {
      const sock = net.connect(server.port, server.address);
      let buf = Buffer.alloc(0);
      sock.on('data', (d) => {
        buf = Buffer.concat([buf, d]);
        if (buf.length >= 2 && buf.length >= buf.readUInt16BE(0) + 2) {
          sock.destroy();
          resolve(packet.streamDecode(buf));
        }
      });
      sock.on('error', reject);
      sock.write(packet.streamEncode({ type: 'query', id: 7, questions: [{ type: 'A', name: 'tcp.test' }] }));
    });
    assert.deepEqual(reply.answers.map((x) => x.data), ['127.0.0.8']);
    assert.equal(server.queries[0].transport, 'tcp');
  });

  it('close() cancels delayed answers instead of waiting for them', async function () {
    const s = await createDnsServer({ address: '127.0.0.3', port: 0 });
    const c = udpClient(s.address, s.port);
    s.setName('later.test', { delayMs: 60000 });
    c.query(1, 'later.test');
    while (s.count('later.test') === 0) await new Promise((r) => setTimeout(r, 5));
    const t0 = Date.now();
    await s.close();
    c.close();
    assert.ok(Date.now() - t0 < 1000);
    // mocha (without --exit) would also hang here if a 60 s timer survived.
  });
});

describe('test helper: dns-server + namespace, ground truth from glibc getaddrinfo', function () {
  this.timeout(10000);
  const server = withDnsServer({ address: '127.0.0.2' });
  beforeEach(function () {
    server.reset();
  });

  it('namespaceSupport() reports ok', function () {
    assert.deepEqual(Object.keys(namespaceSupport()).sort(), ['ok', 'reason']);
    assert.equal(namespaceSupport().ok, true);
  });

  it('runs the command itself (same pid) with the private resolv.conf and hosts, leaving the real ones alone', async function () {
    const realResolv = fs.readFileSync('/etc/resolv.conf', 'utf8');
    const rc = resolvConf({ timeout: 1, attempts: 2, search: 'example.test', ndots: 1, options: ['rotate'] });
    assert.equal(rc, 'nameserver 127.0.0.2\nsearch example.test\noptions timeout:1 attempts:2 ndots:1 rotate\n');
    const hosts = '127.0.0.1 localhost\n';
    const savedNodeOptions = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = '--max-old-space-size=123';
    let child;
    try {
      child = spawnInNamespace({
        resolvConf: rc,
        hosts,
        args: ['-e', `process.stdout.write(JSON.stringify({ pid: process.pid, nodeOptions: process.env.NODE_OPTIONS,
          marker: process.env.UVSCOPE_MARKER, rc: require('fs').readFileSync('/etc/resolv.conf', 'utf8'),
          hosts: require('fs').readFileSync('/etc/hosts', 'utf8') }))`],
        env: { UVSCOPE_MARKER: 'yes' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
    } finally {
      if (savedNodeOptions === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = savedNodeOptions;
    }
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    const code = await new Promise((resolve) => child.on('close', resolve));
    assert.equal(code, 0);
    const seen = JSON.parse(out);
    assert.equal(seen.pid, child.pid);
    assert.equal(seen.nodeOptions, undefined);
    assert.equal(seen.marker, 'yes');
    assert.equal(seen.rc, rc);
    assert.equal(seen.hosts, hosts);
    assert.equal(fs.readFileSync('/etc/resolv.conf', 'utf8'), realResolv);
  });

  it('a 300 ms delayMs name resolves in ~300 ms to the configured A address', async function () {
    server.setName('warm.test', {});
    server.setName('slow.test', { delayMs: 300, a: '127.0.0.42' });
    // The warm-up keeps one-time getaddrinfo/NSS start-up out of the measurement.
    const [, slow] = await lookupInNamespace([{ name: 'warm.test' }, { name: 'slow.test' }], resolvConf());
    assert.equal(slow.address, '127.0.0.42');
    assert.equal(slow.family, 4);
    assert.ok(slow.ms >= 295 && slow.ms <= 350, `took ${slow.ms} ms`);
    // glibc sends A and AAAA together, so both wait out the same 300 ms.
    const [a, aaaa] = server.queries.filter((q) => q.name === 'slow.test');
    assert.deepEqual([a.type, aaaa.type], ['A', 'AAAA']);
    assert.ok(Math.abs(aaaa.at - a.at) < 50, `A/AAAA ${aaaa.at - a.at} ms apart`);
  });

  it('nxdomain gives ENOTFOUND after one A and one AAAA query', async function () {
    server.setName('nx.test', { nxdomain: true });
    const [r] = await lookupInNamespace([{ name: 'nx.test' }], resolvConf({ timeout: 1, attempts: 2 }));
    assert.equal(r.code, 'ENOTFOUND');
    assert.equal(r.errno, -3008); // UV_EAI_NONAME
    assert.equal(r.syscall, 'getaddrinfo');
    assert.deepEqual(summary(server), ['A', 'AAAA']);
  });

  it('servfail gives EAI_AGAIN immediately, after one A+AAAA round per attempt', async function () {
    server.setName('sf.test', { servfail: true });
    const [r] = await lookupInNamespace([{ name: 'sf.test' }], resolvConf({ timeout: 1, attempts: 2 }));
    assert.equal(r.code, 'EAI_AGAIN');
    assert.equal(r.errno, -3001); // UV_EAI_AGAIN
    assert.ok(r.ms < 200, `took ${r.ms} ms`);
    assert.deepEqual(summary(server), ['A', 'AAAA', 'A', 'AAAA']);
  });

  it('dropFirst:1 with timeout:1 attempts:2 costs one resolver timeout (~1 s), then succeeds', async function () {
    server.setName('drop1.test', { dropFirst: 1 });
    const [r] = await lookupInNamespace([{ name: 'drop1.test' }], resolvConf({ timeout: 1, attempts: 2 }));
    assert.equal(r.address, '127.0.0.1');
    assert.ok(r.ms >= 990 && r.ms <= 1250, `took ${r.ms} ms`);
    // The AAAA of the first round is answered; after the timeout glibc re-asks both.
    assert.deepEqual(summary(server), ['A:dropped', 'AAAA', 'A', 'AAAA']);
    const gap = server.queries[2].at - server.queries[0].at;
    assert.ok(gap >= 950 && gap <= 1200, `retry ${gap} ms after the dropped query`);
  });

  it('a never-answered name gives EAI_AGAIN after timeout x attempts (timeout:1 attempts:1 -> ~1 s)', async function () {
    server.setName('never.test', { drop: true });
    const [r] = await lookupInNamespace([{ name: 'never.test' }], resolvConf({ timeout: 1, attempts: 1 }));
    assert.equal(r.code, 'EAI_AGAIN');
    assert.ok(r.ms >= 990 && r.ms <= 1250, `took ${r.ms} ms`);
    assert.deepEqual(summary(server), ['A:dropped', 'AAAA:dropped']);
  });

  it('5 sequential lookups reach the server as exactly 5 A + 5 AAAA queries (no caching)', async function () {
    server.setName('count.test', {});
    const results = await lookupInNamespace(Array(5).fill({ name: 'count.test' }), resolvConf());
    assert.ok(results.every((r) => r.address === '127.0.0.1'));
    assert.equal(server.count('count.test', 'A'), 5);
    assert.equal(server.count('count.test', 'AAAA'), 5);
    assert.equal(server.count('count.test'), 10);
  });

  it('family:4 sends only A; family:6 sends only AAAA', async function () {
    server.setName('fam.test', {});
    const [four, six] = await lookupInNamespace(
      [{ name: 'fam.test', options: { family: 4 } }, { name: 'fam.test', options: { family: 6 } }], resolvConf());
    assert.equal(four.address, '127.0.0.1');
    assert.equal(six.code, 'ENOTFOUND'); // NOERROR without AAAA data
    assert.deepEqual(summary(server), ['A', 'AAAA']);
  });

  it('localhost is answered from /etc/hosts and never reaches the DNS server', async function () {
    const results = await lookupInNamespace(
      [{ name: 'localhost' }, { name: 'localhost', options: { family: 4 } }, { name: 'localhost', options: { family: 6 } }],
      resolvConf(), { hosts: '127.0.0.1 localhost\n::1 localhost\n' });
    // AF_UNSPEC gets both hosts entries; glibc's RFC 3484 sort puts ::1 first.
    assert.deepEqual(results.map((r) => r.address), ['::1', '127.0.0.1', '::1']);
    assert.equal(server.queries.length, 0);
  });

  it('localhost with family:6 does reach DNS (AAAA) when /etc/hosts has no ::1 entry', async function () {
    const [any, six] = await lookupInNamespace(
      [{ name: 'localhost' }, { name: 'localhost', options: { family: 6 } }],
      resolvConf(), { hosts: '127.0.0.1 localhost\n' });
    assert.equal(any.address, '127.0.0.1');
    assert.equal(six.code, 'ENOTFOUND');
    assert.deepEqual(server.queries.map((q) => `${q.name} ${q.type}`), ['localhost AAAA']);
  });
});
