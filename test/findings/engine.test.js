'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const { withDnsServer } = require('../helpers/dns-server');
const { runInNamespace, resolvConf } = require('../helpers/namespace');
const { REGISTER, FIXTURES, freePort, lastJson } = require('../helpers/child');

async function scenario(name, { conf = {}, env = {} } = {}) {
  const port = await freePort();
  const r = await runInNamespace({
    resolvConf: resolvConf({ nameserver: '127.0.0.2', ...conf }),
    args: ['--require', REGISTER, path.join(FIXTURES, 'findings-app.js')],
    env: { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '200', FIXTURE_SCENARIO: name, ...env },
    timeoutMs: 30000,
  });
  assert.equal(r.code, 0, r.stderr);
  const snapshot = lastJson(r.stdout);
  return { snapshot, byId: Object.fromEntries(snapshot.findings.map((f) => [f.id, f])) };
}

describe('findings, against a DNS server the test controls', function () {
  const server = withDnsServer({
    address: '127.0.0.2',
    names: {
      'slow.find.test': { a: '127.0.0.1', delayMs: 300 },
      'dropped.find.test': { a: '127.0.0.1', dropFirst: 1 },
      'api.corp.find.test': { a: '127.0.0.1' },
      '*.find.test': { a: '127.0.0.1' },
    },
  });

  it('threadpool-dns-saturated: 20 concurrent 300 ms lookups on 2 DNS slots, with the pool size that would have sufficed', async () => {
    const { byId } = await scenario('saturated');
    const f = byId['threadpool-dns-saturated'];
    assert.ok(f, `findings: ${Object.keys(byId)}`);
    assert.equal(f.evidence.dnsSlots, 2);
    assert.equal(f.evidence.threadpoolSize, 4);
    assert.equal(f.evidence.peakPendingLookups, 20);
    assert.equal(f.evidence.peakQueuedLookups, 18);
    // The probe behind 18 queued lookups waits ~9 rounds of 300 ms at most; at least one round.
    assert.ok(f.evidence.maxQueueWaitSeconds > 0.25, `wait ${f.evidence.maxQueueWaitSeconds}`);
    assert.match(f.advice[0], /UV_THREADPOOL_SIZE to 39: \(size\+1\)\/2 = 20 DNS slots/);
    // One burst of one name, then nothing: not a missing cache (a pool warming up looks the same).
    assert.equal(byId['dns-no-cache'], undefined);
    // What it cost: the lookups' wait for a DNS slot, per second of the window.
    // 18 of the 20 found both DNS slots taken.
    assert.ok(f.impact.secondsPerSecond > 0.5 && f.impact.requests === 18, JSON.stringify(f.impact));
    assert.equal(f.severity, 'critical');
  });

  it('dns-no-cache: one name looked up again and again for 1.5 s, with the time callers spent on it and the caller', async () => {
    const { byId, snapshot } = await scenario('noCache');
    const f = byId['dns-no-cache'];
    assert.ok(f, `findings: ${Object.keys(byId)}`);
    const h = f.evidence.hostnames[0];
    assert.equal(h.name, 'nocache.find.test');
    assert.equal(h.maxInFlight, 4);
    assert.ok(h.intervals >= 3, `${h.intervals} intervals`);
    assert.match(h.callers[0].caller, /findings-app\.js:\d+$/);
    // Ground truth: the server answered an A and an AAAA query per lookup.
    const lookups = snapshot.points.filter((p) => p.name === 'dns.lookup.duration' && p.attributes['dns.question.name'] === 'nocache.find.test').reduce((a, p) => a + p.histogram.count, 0);
    assert.equal(h.lookups, lookups);
    assert.equal(server.count('nocache.find.test', 'A'), lookups);
    assert.equal(f.impact.requests, lookups);
    assert.ok(f.impact.secondsPerSecond >= 0.5, JSON.stringify(f.impact));
  });

  it('dns-resolver-timeout: a dropped query costs one resolv.conf timeout, and the finding cites timeout and attempts', async () => {
    const { byId } = await scenario('timeout', { conf: { timeout: 1, attempts: 3 } });
    const f = byId['dns-resolver-timeout'];
    assert.ok(f, `findings: ${Object.keys(byId)}`);
    assert.deepEqual(f.evidence.hostnames, [{ name: 'dropped.find.test', lookups: 1 }]);
    assert.equal(f.evidence.resolvConf.timeout, 1);
    assert.equal(f.evidence.resolvConf.attempts, 3);
    assert.deepEqual(f.evidence.resolvConf.nameservers, ['127.0.0.2']);
    assert.match(f.summary, /resolv\.conf timeout \(1 s\)/);
  });

  it('dns-search-expansion: a name with fewer dots than ndots goes through the search list first', async () => {
    server.reset();
    const { byId } = await scenario('search', { conf: { search: 'corp.find.test', ndots: 2 } });
    const f = byId['dns-search-expansion'];
    assert.ok(f, `findings: ${Object.keys(byId)}`);
    assert.deepEqual(f.evidence.hostnames.map((h) => h.name), ['api']);
    assert.equal(f.evidence.ndots, 2);
    // Ground truth: the server saw the expanded name for `api`, and the bare name never.
    assert.ok(server.count('api.corp.find.test') >= 1);
    assert.equal(server.count('api'), 0);
  });

  it('eventloop-blocked: two 250 ms blocks', async () => {
    const { byId } = await scenario('blocked');
    const f = byId['eventloop-blocked'];
    assert.ok(f, `findings: ${Object.keys(byId)}`);
    assert.ok(f.evidence.maxDelaySeconds > 0.2 && f.evidence.maxDelaySeconds < 0.4, `max ${f.evidence.maxDelaySeconds}`);
    assert.equal(f.evidence.intervals, 2);
  });

  it('http-no-keepalive: 40 requests, 40 new connections, one lookup each', async () => {
    const { byId, snapshot } = await scenario('noKeepAlive');
    const f = byId['http-no-keepalive'];
    assert.ok(f, `findings: ${Object.keys(byId)}`);
    assert.deepEqual(f.evidence.hosts, [{ host: 'fast.find.test', requests: 40, newConnections: 40 }]);
    assert.equal(f.evidence.lookupsPerNewConnection, 1);
    const tcp = snapshot.points.find((p) => p.name === 'nodejs.net.connect.duration' && p.attributes['nodejs.net.connect.phase'] === 'dns');
    assert.equal(tcp.histogram.count, 40, 'a connect with a DNS part for each request');
  });

  it('heap-limit-above-container: a 512 MiB heap limit in a 256 MiB cgroup, and none with a 128 MiB heap', async function () {
    const cgroup = '/sys/fs/cgroup/memory/uvscope-test-' + process.pid;
    try {
      require('fs').mkdirSync(cgroup);
      require('fs').writeFileSync(`${cgroup}/memory.limit_in_bytes`, String(256 * 1048576));
    } catch (err) {
      if (process.env.CI) throw new Error(`a cgroup v1 memory controller is required in CI: ${err.message}`, { cause: err });
      this.skip();
    }
    try {
      const run = async (heapMb) => {
        const port = await freePort();
        const r = await runInNamespace({
          resolvConf: resolvConf({ nameserver: '127.0.0.2' }),
          command: 'sh',
          args: ['-c', `echo $$ > ${cgroup}/cgroup.procs && exec "$0" "$@"`, process.execPath, `--max-old-space-size=${heapMb}`, '--require', REGISTER, path.join(FIXTURES, 'findings-app.js')],
          env: { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '200', FIXTURE_SCENARIO: 'idle' },
        });
        assert.equal(r.code, 0, r.stderr);
        return lastJson(r.stdout);
      };
      const big = await run(512);
      const f = big.findings.find((x) => x.id === 'heap-limit-above-container');
      assert.ok(f, JSON.stringify(big.findings));
      assert.equal(f.evidence.containerLimitBytes, 256 * 1048576);
      assert.equal(f.severity, 'critical');
      assert.match(f.advice[0], /--max-old-space-size=192/);
      const small = await run(128);
      assert.deepEqual(small.findings.map((x) => x.id), []);
    } finally {
      require('fs').rmdirSync(cgroup);
    }
  });

  it('a healthy service under load (keep-alive, a cached connection pool) gets no finding', async () => {
    const { snapshot } = await scenario('healthy');
    assert.deepEqual(snapshot.findings, []);
    const host = snapshot.details.dns.hosts.find((h) => h.name === 'fast.find.test');
    assert.ok(!host || host.totalLookups <= 4, 'one lookup per connection');
  });
});
