'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const { withDnsServer } = require('../helpers/dns-server');
const { runInNamespace, resolvConf } = require('../helpers/namespace');
const { REGISTER, FIXTURES, freePort, lastJson, parsePrometheus, sampleValue } = require('../helpers/child');

const APP = path.join(FIXTURES, 'dns-app.js');
const DELAY_MS = 200;
// A lookup's time beyond the server's (its first query in, its last answer out) is the pool
// thread's start and the callback's wait for the loop: 20-32 ms at a load average of 8 on 2
// cores. The app's own timing bounds it from above; this only says it is not another lookup's.
const OVER_SPAN_S = DELAY_MS / 2 / 1000;

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
    // sources/threadpool/sampler.test.js).
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
      assert.ok(s.sum <= r.seconds + 0.001, `${r.via}: agent ${s.sum} s > app-measured ${r.seconds} s`);
      assert.ok(s.sum <= span + OVER_SPAN_S, `${r.via}: ${s.sum} s much more than the ${span} s the server took`);
      // Its one lookup in the bucket of its time (over 0.25 s once on Node 26, loaded).
      for (const bound of [0.1, 0.25, 0.5]) assert.equal(s.le(bound), s.sum <= bound ? 1 : 0, `${r.via}: ${s.sum} s, le ${bound}`);
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
    // Between the server's span (the dropped query in, the retry's answer out) and the app's own
    // timing, which also holds the DNS model's loading at the app's first lookup (the agent's
    // clock starts after it): 3 to 11 ms apart at a load average of 8, 21 ms in a failed run.
    const qs = server.queries.filter((q) => q.name === 'dropped.test');
    const span = (Math.max(...qs.map((q) => q.answeredAt)) - Math.min(...qs.map((q) => q.at))) / 1000;
    assert.ok(span >= 4.9, `the server answered ${span} s after the first query`);
    assert.ok(s.sum >= span - 0.002 && s.sum <= results[0].seconds + 0.001, `agent ${s.sum} s, server ${span} s, app ${results[0].seconds} s`);
  });

  // The DNS sampler's model (names.js, slots.js) loads at the first lookup, inside the app's call:
  // that lookup is counted all the same, with its own duration (loading comes before its start).
  for (const via of ['lookup', 'promises']) {
    it(`the app's first lookup, made at its first line (${via}), is counted with its duration`, async () => {
      const name = `first-${via}.slow.test`;
      const port = await freePort();
      const r = await runInNamespace({
        resolvConf: resolvConf({ nameserver: '127.0.0.2' }),
        args: ['--require', REGISTER, path.join(FIXTURES, 'first-lookup-app.js')],
        env: { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '100', FIXTURE_VIA: via, FIXTURE_NAME: name },
        timeoutMs: 30000,
      });
      assert.equal(r.code, 0, r.stderr);
      const out = lastJson(r.stdout);
      assert.equal(out.code, null);
      const s = lookupSeries(parsePrometheus(out.metrics), name);
      assert.equal(s.count, 1);
      const qs = server.queries.filter((q) => q.name === name);
      const span = (Math.max(...qs.map((q) => q.answeredAt)) - Math.min(...qs.map((q) => q.at))) / 1000;
      assert.ok(span >= DELAY_MS / 1000 - 0.001, `the server answered in ${span} s`);
      assert.ok(s.sum >= span - 0.002, `${s.sum} s < the ${span} s the server took`);
      assert.ok(s.sum <= out.seconds + 0.001, `agent ${s.sum} s > app-measured ${out.seconds} s`);
      assert.ok(s.sum <= span + OVER_SPAN_S, `${s.sum} s much more than the ${span} s the server took`);
    });
  }

  it('does not count the agent\'s own probe lookups, and bounds hostnames (beyond UVSCOPE_DNS_MAX_NAMES they count as _other)', async () => {
    const names = ['a.fast.test', 'b.fast.test', 'c.fast.test', 'd.fast.test'];
    // A slow lookup first keeps the pool busy across samples, so the probes run (they run only
    // while the pool has work) while the app's lookups are being counted.
    const { samples } = await runApp(
      { lookups: [{ via: 'lookup', name: 'a.slow.test' }, ...names.map((name) => ({ via: 'lookup', name }))], settleMs: 600 },
      { env: { UVSCOPE_DNS_MAX_NAMES: '2' } },
    );
    const series = samples.filter((s) => s.name === 'dns_lookup_duration_seconds_count');
    const labels = series.map((s) => s.labels.dns_question_name);
    assert.equal(labels.length, 3, labels.join());
    assert.ok(labels.includes('_other'));
    assert.ok(labels.every((l) => l === '_other' || l === 'a.slow.test' || names.includes(l)), labels.join());
    assert.equal(lookupSeries(samples, '_other').count, 3);
    // Probes ran while the slow lookup was pending (a getnameinfo of 127.0.0.1 each) and are counted as probes only.
    assert.ok(sampleValue(samples, 'nodejs_uv_threadpool_queue_wait_seconds_count', { queue: 'dns' }) >= 1);
    assert.equal(server.queries.filter((q) => q.name === 'localhost').length, 0, 'probe lookups are answered from /etc/hosts');
  });
});

describe('samplers/dns: each lookup split into its wait for a DNS slot and its resolving, against the DNS server\'s own clock', function () {
  const SPLIT = path.join(FIXTURES, 'queue-split-app.js');
  const server = withDnsServer({ address: '127.0.14.2', names: { '*.split.test': { a: '127.0.0.1', delayMs: 30 } } });

  async function run(plan) {
    server.reset();
    const port = await freePort();
    const r = await runInNamespace({
      resolvConf: resolvConf({ nameserver: '127.0.14.2' }),
      args: ['--require', REGISTER, SPLIT],
      env: { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '100', FIXTURE_PLAN: JSON.stringify(plan) },
      timeoutMs: 30000,
    });
    assert.equal(r.code, 0, r.stderr);
    const out = lastJson(r.stdout);
    // Ground truth per lookup: libuv runs lookups FIFO, so the k-th lookup of a name is the k-th
    // query for it at the server; it waited from the app's call to the query's arrival, and
    // resolved from there to the answer.
    const truth = { wait: 0, resolve: 0, n: 0, byHost: new Map() };
    for (const name of plan.hosts) {
      const calls = out.lookups.filter((l) => l.name === name);
      const qs = server.queries.filter((q) => q.name === name);
      assert.equal(qs.length, calls.length, `${name}: one A query per lookup`);
      const h = { wait: 0, resolve: 0, n: calls.length };
      calls.forEach((c, k) => {
        h.wait += (qs[k].at - c.at) / 1000;
        h.resolve += (qs[k].answeredAt - qs[k].at) / 1000;
      });
      truth.byHost.set(name, h);
      truth.wait += h.wait;
      truth.resolve += h.resolve;
      truth.n += h.n;
    }
    const samples = parsePrometheus(out.metrics);
    const agent = { wait: 0, total: 0, n: 0 };
    for (const name of plan.hosts) {
      const labels = { dns_question_name: name };
      agent.wait += sampleValue(samples, 'nodejs_dns_lookup_queue_wait_seconds_sum', labels);
      agent.n += sampleValue(samples, 'nodejs_dns_lookup_queue_wait_seconds_count', labels);
      agent.total += sampleValue(samples, 'dns_lookup_duration_seconds_sum', { ...labels, error_type: '' });
    }
    return { out, truth, agent, samples };
  }

  it('a wolt-like backlog (16 lookups at a time, 20 names, 30 ms answers, 2 DNS slots): the mean wait and resolving are within 5 ms + 10 % of the server\'s', async () => {
    const { truth, agent, out } = await run({ hosts: Array.from({ length: 20 }, (_, i) => `svc-${i}.split.test`), workers: 16, seconds: 2 });
    assert.equal(agent.n, truth.n);
    const wait = { agent: agent.wait / agent.n, truth: truth.wait / truth.n };
    const resolve = { agent: (agent.total - agent.wait) / agent.n, truth: truth.resolve / truth.n };
    if (process.env.UVSCOPE_TEST_VERBOSE) console.log({ wait, resolve, lookups: agent.n });
    assert.ok(wait.truth > 0.1, `a real backlog: the server saw lookups wait ${wait.truth} s on average`);
    assert.ok(Math.abs(wait.agent - wait.truth) <= 0.005 + 0.1 * wait.truth, `wait: uvscope ${wait.agent} s, server ${wait.truth} s`);
    assert.ok(Math.abs(resolve.agent - resolve.truth) <= 0.005 + 0.1 * resolve.truth, `resolving: uvscope ${resolve.agent} s, server ${resolve.truth} s`);
    // The snapshot's per-host figures add up to the same split.
    const hosts = out.snapshot.details.dns.hosts;
    assert.equal(out.snapshot.details.dns.dnsSlots, 2);
    for (const h of hosts) {
      assert.ok(h.p50 > 0 && h.p99 >= h.p50 && h.stddev >= 0, JSON.stringify(h));
    }
  });

  it('with no backlog (one lookup at a time) the queue wait is about 0 and resolving is the server\'s time', async () => {
    const { truth, agent } = await run({ hosts: ['one.split.test', 'two.split.test'], workers: 1, seconds: 1 });
    assert.equal(agent.n, truth.n);
    assert.ok(agent.wait / agent.n < 0.001, `mean wait ${agent.wait / agent.n} s`);
    const resolve = { agent: (agent.total - agent.wait) / agent.n, truth: truth.resolve / truth.n };
    assert.ok(Math.abs(resolve.agent - resolve.truth) <= 0.005 + 0.1 * resolve.truth, `resolving: uvscope ${resolve.agent} s, server ${resolve.truth} s`);
  });
});
