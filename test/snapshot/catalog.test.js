'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const { CATALOG } = require('../../lib/snapshot/catalog');
const { published } = require('../../lib/core/channels');
const { prometheusName } = require('../../exporters/prometheus');
const { REGISTER, FIXTURES, cleanEnv, freePort, parsePrometheus, scrape } = require('../helpers/child');
const { createOtlpReceiver } = require('../helpers/otlp-receiver');
const { createDogStatsdReceiver } = require('../helpers/dogstatsd-receiver');

// What each exporter must send of each catalog metric, derived here from the catalog's fields
// alone (not from the exporters' code), so a metric an exporter drops fails this test unless a
// catalog field excludes it on purpose.
// Busy pool threads come from thread names Node 20 (libuv 1.46) does not set: left out there.
const ABSENT = Number(process.versions.node.split('.')[0]) < 22 && new Set(['nodejs.uv.threadpool.busy']);
const present = (m) => !ABSENT || !ABSENT.has(m.name);

const expected = {
  /** Prometheus: every metric, histograms as _count (and _bucket, _sum). */
  prometheus: (m) => [m.type === 'histogram' ? `${prometheusName(m)}_count` : prometheusName(m)],
  /** OTLP: histograms only when recorded one value at a time (perEvent or onePerSample). */
  otlp: (m) => (m.type !== 'histogram' || m.perEvent || m.onePerSample ? [m.name] : []),
  /** DogStatsD: per-event metrics as distributions, other histograms as .count and .sum unless
   * their interval gauges carry them, counters as counts, gauges as gauges. */
  datadog: (m) => {
    if (m.perEvent) return [`${m.name}|d`];
    if (m.type === 'histogram') return m.intervalGauges ? [] : [`${m.name}.count|c`, `${m.name}.sum|c`];
    return [`${m.name}|${m.type === 'counter' ? 'c' : 'g'}`];
  },
};

describe('metrics: the catalog reaches every exporter', function () {
  this.timeout(60000);
  const cgroup = `/sys/fs/cgroup/memory/uvscope-metrics-test-${process.pid}`;
  // container.cpu.* exist only under a CPU quota: 2 CPUs, which the app never reaches.
  const cpuCgroup = `/sys/fs/cgroup/cpu/uvscope-metrics-test-${process.pid}`;
  let child;
  let otlp;
  let statsd;
  let port;

  before(async function () {
    try {
      fs.mkdirSync(cgroup);
      fs.writeFileSync(`${cgroup}/memory.limit_in_bytes`, String(1024 * 1048576));
      fs.mkdirSync(cpuCgroup);
      fs.writeFileSync(`${cpuCgroup}/cpu.cfs_quota_us`, '200000');
    } catch (err) {
      if (process.env.CI) throw new Error(`cgroup v1 memory and cpu controllers are required in CI: ${err.message}`, { cause: err });
      this.skip(); // nodejs.memory.constrained exists only under a container limit
    }
    otlp = await createOtlpReceiver();
    statsd = await createDogStatsdReceiver();
    port = await freePort();
    child = spawn('sh', ['-c', `echo $$ > ${cgroup}/cgroup.procs && echo $$ > ${cpuCgroup}/cgroup.procs && exec "$0" "$@"`,
      process.execPath, '--expose-gc', '--require', REGISTER, path.join(FIXTURES, 'every-metric-app.js')], {
      env: cleanEnv({
        UVSCOPE_EXPORTERS: 'prometheus,otlp,datadog',
        UVSCOPE_PROMETHEUS_PORT: String(port),
        UVSCOPE_INTERVAL_MS: '200',
        // Armed from the start: the app's lookup is a threadpool job (nodejs.uv.threadpool.job.duration).
        UVSCOPE_TRACER: 'on',
        // The capture of what blocked the loop from the start (not at the first block): nodejs.eventloop.block.duration.
        UVSCOPE_BLOCKERS: 'on',
        // A bad value: counted in uvscope.errors{component="options"}.
        UVSCOPE_DNS_MAX_NAMES: 'lots',
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
        OTEL_METRIC_EXPORT_INTERVAL: '500',
        OTEL_TRACES_EXPORTER: 'none',
        DD_AGENT_HOST: '127.0.0.1',
        DD_DOGSTATSD_PORT: String(statsd.port),
        UVSCOPE_DATADOG_FLUSH_INTERVAL_MS: '1000',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    await new Promise((resolve, reject) => {
      child.stdout.once('data', resolve);
      child.once('exit', (code) => reject(new Error(`the app exited (${code}): ${stderr}`)));
    });
  });

  after(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(child.pid, 'SIGKILL');
      await exited;
    }
    if (otlp) await otlp.close();
    if (statsd) await statsd.close();
    for (const dir of [cgroup, cpuCgroup]) {
      try {
        fs.rmdirSync(dir);
      } catch {
        // skipped before it was made
      }
    }
  });

  it('every per-event metric names a channel of lib/core/channels.js and fields of its message', () => {
    for (const m of CATALOG.filter((x) => x.perEvent)) {
      assert.ok(published[m.perEvent.channel], `${m.name}: no channel ${m.perEvent.channel}`);
      assert.deepEqual(Object.keys(m.perEvent.attributes).sort(), [...m.attributes].sort(), m.name);
    }
  });

  it('Prometheus exposition has every catalog metric', async () => {
    const missing = async () => {
      const names = new Set(parsePrometheus((await scrape(port)).text).map((s) => s.name));
      return CATALOG.filter(present).flatMap(expected.prometheus).filter((n) => !names.has(n));
    };
    let left = await missing();
    for (let i = 0; i < 20 && left.length; i++) {
      await new Promise((r) => setTimeout(r, 250));
      left = await missing();
    }
    assert.deepEqual(left, []);
  });

  it('the OTLP receiver gets every catalog metric but the pre-bucketed histograms', async () => {
    const names = () => new Set(otlp.metrics().filter((r) => r.scope.name === 'uvscope').map((r) => r.name));
    const want = CATALOG.filter(present).flatMap(expected.otlp);
    await otlp.waitFor(() => want.every((n) => names().has(n)), 15000).catch(() => {});
    assert.deepEqual(want.filter((n) => !names().has(n)), []);
    const leftOut = CATALOG.filter((m) => expected.otlp(m).length === 0).map((m) => m.name);
    assert.deepEqual(leftOut.filter((n) => names().has(n)), [], 'left out by the catalog, and not sent');
    assert.ok(leftOut.includes('nodejs.eventloop.delay'));
  });

  it('the DogStatsD receiver gets every catalog metric, as the catalog says', async () => {
    const sent = () => new Set(statsd.metrics.map((m) => `${m.name}|${m.type}`));
    const want = CATALOG.filter(present).flatMap(expected.datadog);
    await statsd.waitFor(() => want.every((n) => sent().has(n)), 15000).catch(() => {});
    assert.deepEqual(want.filter((n) => !sent().has(n)), []);
    assert.ok(!sent().has('nodejs.eventloop.delay.count|c'), 'carried by its interval gauges instead');
  });
});
