'use strict';
// The corpus of healthy twins: apps that look like the lab's incidents at a glance and are fine.
// Every finding uvscope has (every rule lib/findings/index.js lists) must stay silent.

const assert = require('node:assert/strict');
const path = require('path');
const { withDnsServer } = require('../helpers/dns-server');
const { runInNamespace, resolvConf } = require('../helpers/namespace');
const { REGISTER, FIXTURES, freePort, lastJson } = require('../helpers/child');

const APP = path.join(FIXTURES, 'twins-app.js');
const DNS = '127.0.14.3';

async function twin(scenario) {
  const port = await freePort();
  const r = await runInNamespace({
    resolvConf: resolvConf({ nameserver: DNS }),
    args: ['--require', REGISTER, APP],
    env: { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '300', FIXTURE_SCENARIO: scenario },
    timeoutMs: 30000,
  });
  assert.equal(r.code, 0, r.stderr);
  const out = lastJson(r.stdout);
  const raised = out.snapshot.findings.map((f) => `${f.id}: ${f.summary} ${JSON.stringify(f.evidence)}`);
  if (process.env.UVSCOPE_TEST_VERBOSE) console.log(scenario, JSON.stringify(out.facts), raised);
  return { ...out, raised };
}

const requests = (snapshot, reused) => snapshot.points
  .filter((p) => p.name === 'nodejs.http.client.requests' && (reused === undefined || p.attributes['nodejs.http.connection.reused'] === String(reused)))
  .reduce((a, p) => a + p.value, 0);

describe('findings: healthy twins raise no finding', function () {
  const server = withDnsServer({
    address: DNS,
    names: {
      'api.twins.test': { a: '127.0.0.1', delayMs: 20, ttl: 60 },
      '*.cron.twins.test': { a: '127.0.0.1', delayMs: 5 },
    },
  });

  it('a keep-alive pool warming up: 8 concurrent lookups of one name at start, then none', async () => {
    server.reset();
    const { raised, facts, snapshot } = await twin('poolWarmup');
    assert.deepEqual(raised, []);
    assert.ok(facts.requests > 100, `${facts.requests} requests`);
    assert.equal(server.count('api.twins.test', 'A'), 8, 'one lookup per socket');
    assert.equal(requests(snapshot, false), facts.serverConnections);
  });

  it('16 clients queued on a keep-alive agent with 4 sockets (the issue\'s reproduction): no http-no-keepalive', async () => {
    const { raised, facts, snapshot } = await twin('queuedKeepAlive');
    assert.deepEqual(raised, []);
    assert.equal(facts.serverConnections, 4);
    assert.equal(requests(snapshot, false), 4, 'new connections as the server counts them');
    assert.equal(requests(snapshot), facts.requests);
  });

  it('a busy but healthy CPU-bound server: 1 ms handlers, high utilization, no long block', async () => {
    const { raised, facts } = await twin('cpuBusy');
    assert.deepEqual(raised, []);
    // Busy is the loop's utilization; how many 1 ms handlers fit in 2.5 s depends on the CPU the
    // machine leaves the client and the server (284 to 477 at a load average of 8).
    assert.ok(facts.requests > 100, `${facts.requests} requests`);
    assert.ok(facts.utilization > 0.3, `utilization ${facts.utilization}`);
  });

  it('an app resolving through cacheable-lookup, 200 lookups a second', async () => {
    server.reset();
    const { raised, facts } = await twin('cacheableLookup');
    assert.deepEqual(raised, []);
    assert.ok(facts.lookups > 300, `${facts.lookups} lookups`);
    assert.ok(server.count('api.twins.test', 'A') <= 2, 'answered from its cache');
  });

  it('an app on undici with its DNS interceptor', async () => {
    server.reset();
    const { raised, facts } = await twin('undiciDns');
    assert.deepEqual(raised, []);
    assert.ok(facts.requests > 100, `${facts.requests} requests`);
    // At most one lookup (A and AAAA) per client while the cache was empty, then none.
    assert.ok(server.count('api.twins.test') <= 16, `${server.count('api.twins.test')} queries`);
  });

  it('periodic cron-like bursts of lookups (nothing cached) and requests', async () => {
    server.reset();
    const { raised, facts } = await twin('cronBursts');
    assert.deepEqual(raised, []);
    assert.ok(facts.lookups >= 12, `${facts.lookups} lookups`);
    assert.equal(server.count('a.cron.twins.test', 'A'), facts.lookups / 3, 'nothing cached: every lookup reached the server');
  });

  it('a slow but healthy upstream: 300 ms responses, fast DNS', async () => {
    const { raised, facts } = await twin('slowUpstream');
    assert.deepEqual(raised, []);
    assert.ok(facts.requests >= 40, `${facts.requests} requests`);
    assert.equal(facts.serverConnections, 8);
  });
});
