'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const { withDnsServer } = require('../helpers/dns-server');
const { runInNamespace, resolvConf } = require('../helpers/namespace');
const { REGISTER, FIXTURES, freePort, lastJson, parsePrometheus, sampleValue } = require('../helpers/child');

const APP = path.join(FIXTURES, 'dns-app.js');
const DELAY_MS = 200;

/** Run dns-app.js with the agent preloaded, in a namespace pointed at the test DNS server. */
async function runApp(plan, { env = {}, conf = {} } = {}) {
  const port = await freePort();
  const r = await runInNamespace({
    resolvConf: resolvConf({ nameserver: '127.0.0.2', ...conf }),
    args: ['--require', REGISTER, APP],
    env: { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '100', FIXTURE_PLAN: JSON.stringify({ settleMs: 250, ...plan }), ...env },
    timeoutMs: 30000,
  });
  assert.equal(r.code, 0, r.stderr);
  const out = lastJson(r.stdout);
  return { results: out.results, samples: parsePrometheus(out.metrics), stderr: r.stderr };
}

function lookupSeries(samples, name, errorType = '') {
  const labels = { dns_question_name: name, error_type: errorType };
  return {
    count: sampleValue(samples, 'dns_lookup_duration_seconds_count', labels),
    sum: sampleValue(samples, 'dns_lookup_duration_seconds_sum', labels),
    le: (bound) => sampleValue(samples, 'dns_lookup_duration_seconds_bucket', { ...labels, le: String(bound) }),
  };
}

describe('samplers/dns: every lookup, against a DNS server the test controls', function () {
  const server = withDnsServer({
    address: '127.0.0.2',
    names: {
      '*.slow.test': { a: '127.0.0.1', delayMs: DELAY_MS },
      'missing.test': { nxdomain: true },
      'broken.test': { servfail: true },
      'dropped.test': { a: '127.0.0.1', dropFirst: 1 },
      '*.fast.test': { a: '127.0.0.1' },
    },
  });

  it('times lookups made through dns.lookup, dns.promises, util.promisify, net, http, fetch and dgram within a few ms of the answer delay', async () => {
    const vias = ['lookup', 'promises', 'promisify', 'net', 'http', 'fetch', 'dgram'];
    // One at a time: concurrent lookups would queue for the pool's 2 DNS slots (that is tested in
    // samplers/threadpool.test.js).
    const { results, samples } = await runApp({ sequential: true, lookups: vias.map((via) => ({ via, name: `${via}.slow.test` })) });
    for (const r of results) {
      assert.equal(r.code, null, `${r.via}: ${r.code}`);
      const s = lookupSeries(samples, r.name);
      assert.equal(s.count, 1, `${r.via}: one lookup of ${r.name}`);
      // The answer took DELAY_MS at the server; the agent's figure is the lookup, which the app's
      // own timing (connect and request included) bounds from above.
      // Ground truth from the server: its first query for the name arrived, its last answer left.
      const qs = server.queries.filter((q) => q.name === r.name);
      const span = (Math.max(...qs.map((q) => q.answeredAt)) - Math.min(...qs.map((q) => q.at))) / 1000;
      assert.ok(span >= DELAY_MS / 1000 - 0.001, `${r.via}: the server answered in ${span} s`);
      assert.ok(s.sum >= span - 0.002, `${r.via}: ${s.sum} s < the ${span} s the server took`);
      assert.ok(s.sum <= span + 0.02, `${r.via}: ${s.sum} s much more than the ${span} s the server took`);
      assert.ok(s.sum <= r.seconds + 0.001, `${r.via}: agent ${s.sum} s > app-measured ${r.seconds} s`);
      assert.equal(s.le(0.1), 0);
      assert.equal(s.le(0.25), 1);
    }
  });

  it('labels failures with the error code: ENOTFOUND for NXDOMAIN, EAI_AGAIN for SERVFAIL', async () => {
    const { results, samples } = await runApp({ lookups: [{ via: 'lookup', name: 'missing.test' }, { via: 'promises', name: 'broken.test' }] });
    assert.deepEqual(results.map((r) => r.code), ['ENOTFOUND', 'EAI_AGAIN']);
    assert.equal(lookupSeries(samples, 'missing.test', 'ENOTFOUND').count, 1);
    assert.equal(lookupSeries(samples, 'broken.test', 'EAI_AGAIN').count, 1);
    assert.equal(lookupSeries(samples, 'missing.test').count, undefined, 'no success series for a failed name');
  });

  it('a lookup whose first query is dropped takes one resolv.conf timeout (5 s) and lands in the (4, 6] bucket', async function () {
    this.timeout(20000);
    server.reset();
    const { results, samples } = await runApp({ lookups: [{ via: 'lookup', name: 'dropped.test' }] }, { conf: { timeout: 5, attempts: 2 } });
    assert.equal(results[0].code, null);
    assert.ok(results[0].seconds > 4.9 && results[0].seconds < 5.5, `app saw ${results[0].seconds} s`);
    const s = lookupSeries(samples, 'dropped.test');
    assert.equal(s.le(4), 0);
    assert.equal(s.le(6), 1);
    assert.ok(Math.abs(s.sum - results[0].seconds) < 0.01, `agent ${s.sum} s vs app ${results[0].seconds} s`);
  });

  it('does not count the agent\'s own probe lookups, and bounds hostnames (beyond UVSCOPE_DNS_MAX_NAMES they count as _other)', async () => {
    const names = ['a.fast.test', 'b.fast.test', 'c.fast.test', 'd.fast.test'];
    const { samples } = await runApp(
      { lookups: names.map((name) => ({ via: 'lookup', name })), settleMs: 600 },
      { env: { UVSCOPE_DNS_MAX_NAMES: '2' } },
    );
    const series = samples.filter((s) => s.name === 'dns_lookup_duration_seconds_count');
    const labels = series.map((s) => s.labels.dns_question_name);
    assert.equal(labels.length, 3, labels.join());
    assert.ok(labels.includes('_other'));
    assert.ok(labels.every((l) => l === '_other' || names.includes(l)), labels.join());
    assert.equal(lookupSeries(samples, '_other').count, 2);
    // Probes ran every 100 ms (a getaddrinfo of localhost each) and are counted as probes only.
    assert.ok(sampleValue(samples, 'nodejs_uv_threadpool_queue_wait_seconds_count', { queue: 'dns' }) >= 3);
    assert.equal(server.queries.filter((q) => q.name === 'localhost').length, 0, 'probe lookups are answered from /etc/hosts');
  });
});
