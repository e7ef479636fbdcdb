'use strict';

const assert = require('node:assert/strict');
const path = require('path');
const { spawn } = require('child_process');
const { prometheusName, renderText, createExporter } = require('../../exporters/prometheus');
const { CATALOG, metric } = require('../../lib/snapshot/catalog');
const { ROOT, REGISTER, FIXTURES, cleanEnv, runNode, lastJson, freePort, stopChild, parsePrometheus, sampleValue, scrape } = require('../helpers/child');
const { requirePrometheus, promtoolCheckMetrics, startPrometheus } = require('../helpers/prometheus');

describe('exporters/prometheus', function () {
  it('maps the catalog mechanically: dots to underscores, unit s to _seconds, counters get _total', () => {
    assert.equal(prometheusName(metric('dns.lookup.duration')), 'dns_lookup_duration_seconds');
    assert.equal(prometheusName(metric('nodejs.eventloop.delay.p99')), 'nodejs_eventloop_delay_p99_seconds');
    assert.equal(prometheusName(metric('nodejs.uv.threadpool.queue_wait')), 'nodejs_uv_threadpool_queue_wait_seconds');
    assert.equal(prometheusName(metric('nodejs.uv.requests.active')), 'nodejs_uv_requests_active');
    assert.equal(prometheusName(metric('uvscope.errors')), 'uvscope_errors_total');
    assert.equal(new Set(CATALOG.map(prometheusName)).size, CATALOG.length, 'names are unique');
  });

  it('its own server writes the same text as prom-client\'s registry for the same snapshot, hostile label values included', async () => {
    const { Registry } = require('prom-client');
    const h = (counts, sum) => ({ bounds: [0.001, 0.5, 4], counts, sum, count: counts.reduce((a, b) => a + b, 0) });
    const latest = {
      points: [
        { name: 'nodejs.uv.requests.active', attributes: { 'nodejs.uv.request.type': 'GetAddrInfoReqWrap' }, value: 3 },
        { name: 'nodejs.uv.threadpool.size', attributes: {}, value: 4 },
        { name: 'nodejs.eventloop.delay.p99', attributes: {}, value: 0.0125 },
        { name: 'dns.lookup.duration', attributes: { 'dns.question.name': 'a"b\\c\nd', 'error.type': '' }, histogram: h([1, 2, 0, 1], 5.5) },
        { name: 'dns.lookup.duration', attributes: { 'dns.question.name': 'empty', 'error.type': 'ENOTFOUND' }, histogram: h([0, 0, 0, 0], 0) },
        { name: 'nodejs.eventloop.delay', attributes: {}, histogram: h([7, 0, 0, 0], 0.001) },
        { name: 'uvscope.errors', attributes: { 'uvscope.component': 'options' }, value: 2 },
      ],
    };
    const registry = new Registry();
    const exporter = createExporter({ options: { prometheus: { registry } }, latest: () => latest, server: null });
    try {
      assert.equal(renderText([{ attributes: {}, snapshot: latest }]), await registry.metrics());
    } finally {
      await exporter.close();
    }
  });

  it('serves /metrics that passes promtool check metrics, with empty histograms left out', async function () {
    requirePrometheus(this);
    const port = await freePort();
    const r = await runNode(['--require', REGISTER, '-e', `
      const dns = require('dns');
      dns.lookup('localhost', () => {});
      setTimeout(async () => {
        const res = await fetch('http://127.0.0.1:${port}/metrics');
        const other = await fetch('http://127.0.0.1:${port}/nothing-here');
        console.log(JSON.stringify({ status: res.status, type: res.headers.get('content-type'), text: await res.text(), other: other.status }));
      }, 1300);
    `], { env: { UVSCOPE_PROMETHEUS_PORT: String(port) } });
    assert.equal(r.code, 0, r.stderr);
    const out = lastJson(r.stdout);
    assert.equal(out.status, 200);
    assert.match(out.type, /^text\/plain; version=0\.0\.4/);
    assert.equal(out.other, 404);
    const check = await promtoolCheckMetrics(out.text);
    assert.ok(check.ok, check.output);
    const samples = parsePrometheus(out.text);
    assert.equal(sampleValue(samples, 'dns_lookup_duration_seconds_count', { dns_question_name: 'localhost' }), 1);
    // The same lookup's wait for a DNS slot, by the same name.
    assert.equal(sampleValue(samples, 'nodejs_dns_lookup_queue_wait_seconds_count', { dns_question_name: 'localhost' }), 1);
    // No lookup failed: no error series, and no NaN anywhere.
    assert.ok(!samples.some((s) => s.name.startsWith('dns_') && s.labels.error_type !== ''));
    assert.ok(samples.every((s) => !Number.isNaN(s.value)));
    // The first sample (at 1 s) came before the first probe returned: its histogram was empty
    // then and is left out, HELP/TYPE only.
    assert.equal(sampleValue(samples, 'nodejs_uv_threadpool_queue_wait_seconds_count', { queue: 'dns' }), undefined);
    assert.match(out.text, /# TYPE nodejs_uv_threadpool_queue_wait_seconds histogram/);
  });

  // The app's registry may come from prom-client 15 or from its successor @prometheus-io/client
  // 0.16 (Node 22+ per its engines).
  for (const lib of ['prom-client', '@prometheus-io/client']) {
  it(`puts its metrics into the app's own ${lib} registry next to collectDefaultMetrics(), opening no server`, async function () {
    requirePrometheus(this);
    if (lib === '@prometheus-io/client' && Number(process.versions.node.split('.')[0]) < 22) {
      this.skip(); // @prometheus-io/client 0.16 declares node ^22 || ^24 || >=26
    }
    // @prometheus-io/client is installed in peers/ (Node 22+), not at the root.
    const resolved = lib === 'prom-client' ? lib : require.resolve(lib, { paths: [path.join(ROOT, 'peers')] });
    const port = await freePort();
    const r = await runNode(['-e', `
      const client = require(${JSON.stringify(resolved)});
      const registry = new client.Registry();
      client.collectDefaultMetrics({ register: registry });
      const uvscope = require(${JSON.stringify(ROOT)});
      const agent = uvscope.start({ prometheus: { registry, port: ${port} } });
      agent.sampleNow();
      registry.metrics().then(async (text) => {
        let served = true;
        await fetch('http://127.0.0.1:${port}/metrics').catch(() => (served = false));
        console.log(JSON.stringify({ text, served, server: agent.exporters[0].server }));
        await uvscope.stop();
        console.log(JSON.stringify({ after: (await registry.metrics()).includes('nodejs_uv_') }));
      });
    `], { cwd: ROOT });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /UVSCOPE_/);
    const lines = r.stdout.trim().split('\n');
    const out = JSON.parse(lines[0]);
    assert.equal(out.served, false, 'no server of its own');
    assert.equal(out.server, null);
    const samples = parsePrometheus(out.text);
    assert.equal(sampleValue(samples, 'nodejs_uv_threadpool_size'), 4);
    assert.ok(sampleValue(samples, 'nodejs_eventloop_lag_seconds') !== undefined, 'prom-client defaults are there too');
    // promtool complains about some of the library's own default metrics (nodejs_active_*_total
    // gauges, nodejs_eventloop_utilization_histogram...), never about uvscope's.
    const check = await promtoolCheckMetrics(out.text);
    const uvscopeNames = new Set(CATALOG.map(prometheusName));
    const ours = check.output.split('\n').filter((l) => uvscopeNames.has(l.trim().split(' ')[0]));
    assert.deepEqual(ours, []);
    assert.deepEqual(JSON.parse(lines[1]), { after: false }, 'stop() removes uvscope\'s metrics from the app\'s registry');
  });
  }

  describe('a real Prometheus server scraping an app with the agent', function () {
    let app;
    let prom;
    before(function () {
      requirePrometheus(this);
    });
    after(async () => {
      if (prom) await prom.close();
      await stopChild(app);
    });

    it('returns uvscope\'s series through the query API', async function () {
      this.timeout(60000);
      const port = await freePort();
      app = spawn(process.execPath, ['--require', REGISTER, path.join(FIXTURES, 'long-running-app.js')], {
        env: cleanEnv({ UVSCOPE_PROMETHEUS_PORT: String(port) }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      await scrape(port);
      prom = await startPrometheus({ targets: [`127.0.0.1:${port}`], scrapeIntervalMs: 1000 });
      const size = await prom.waitFor('nodejs_uv_threadpool_size', (r) => r.length === 1, 30000);
      assert.equal(size[0].value[1], '4');
      assert.equal(size[0].metric.job, 'uvscope');
      const lookups = await prom.waitFor('dns_lookup_duration_seconds_count{dns_question_name="localhost",error_type=""}', (r) => r.length === 1 && Number(r[0].value[1]) > 0, 30000);
      assert.ok(Number(lookups[0].value[1]) >= 1);
      const p99 = await prom.query('histogram_quantile(0.99, sum by (le) (dns_lookup_duration_seconds_bucket))');
      assert.ok(Number(p99[0].value[1]) > 0 && Number(p99[0].value[1]) < 0.1, `p99 ${p99[0].value[1]}`);
      const backlog = await prom.query('nodejs_uv_requests_active{type="GetAddrInfoReqWrap"}');
      assert.equal(backlog.length, 1);
    });
  });
});
