'use strict';
// npm start: a service under load with uvscope attached, its libuv figures printed each second.
//
// Where a private mount namespace is available (Linux, root), the service's upstream hostname is
// answered by a local DNS server after 50 ms, the way a slow resolver answers: with the default
// pool of 4 (2 DNS slots) lookups queue, and uvscope shows the queue and the wait. Elsewhere the
// upstream is `localhost` (answered from /etc/hosts) and the demo says why.
const http = require('http');
const path = require('path');
const { spawn } = require('child_process');
const { createDnsServer } = require('../test/helpers/dns-server');
const { namespaceSupport, spawnInNamespace, resolvConf } = require('../test/helpers/namespace');
const { freePort, parsePrometheus, cleanEnv } = require('../test/helpers/child');

const SECONDS = Number(process.env.UVSCOPE_DEMO_SECONDS) || 4;
const CONCURRENCY = 32;
const DNS_DELAY_MS = 50;
const REGISTER = path.join(__dirname, '..', 'register.js');

async function main() {
  const ns = namespaceSupport();
  let dnsServer = null;
  if (ns.ok) {
    dnsServer = await createDnsServer({ address: '127.0.0.2', port: 53 });
    dnsServer.setName('upstream.demo.test', { a: '127.0.0.1', delayMs: DNS_DELAY_MS });
    console.log(`uvscope demo: the service looks up upstream.demo.test for every request; the DNS server answers in ${DNS_DELAY_MS} ms.`);
  } else {
    console.log(`uvscope demo: no slow DNS server here (${ns.reason}); the upstream is localhost, answered from /etc/hosts.`);
  }
  try {
    for (const poolSize of [4, 64]) await runPhase(poolSize, ns);
  } finally {
    if (dnsServer) await dnsServer.close();
  }
  console.log(`
With UV_THREADPOOL_SIZE=4 only 2 lookups run at once (libuv caps getaddrinfo at (size+1)/2
threads), so the rest queue (GetAddrInfoReqWrap, dns queued) and every lookup's time includes that
wait (dns queue wait). With 64 threads (32 DNS slots) the queue is gone: the wolt fix, measured.
Try it on your app: node --require uvscope/register app.js, then curl 127.0.0.1:9464/metrics`);
}

async function runPhase(poolSize, ns) {
  const upstream = http.createServer((req, res) => res.end('upstream\n')).listen(0, '127.0.0.1');
  await new Promise((r) => upstream.once('listening', r));
  const metricsPort = await freePort();
  const env = {
    UVSCOPE_PROMETHEUS_PORT: String(metricsPort),
    UV_THREADPOOL_SIZE: String(poolSize),
    UPSTREAM_PORT: String(upstream.address().port),
    UPSTREAM_HOST: ns.ok ? 'upstream.demo.test' : 'localhost',
  };
  const args = ['--require', REGISTER, path.join(__dirname, 'app.js')];
  const stdio = ['ignore', 'pipe', 'inherit'];
  const app = ns.ok
    ? spawnInNamespace({ resolvConf: resolvConf({ nameserver: '127.0.0.2' }), args, env: cleanEnv(env), stdio })
    : spawn(process.execPath, args, { env: cleanEnv(env), stdio });
  const appPort = await new Promise((resolve, reject) => {
    app.stdout.once('data', (d) => resolve(JSON.parse(String(d)).port));
    app.once('exit', () => reject(new Error('the demo service exited early')));
  });
  console.log(`\nUV_THREADPOOL_SIZE=${poolSize}: service http://127.0.0.1:${appPort}/  metrics: http://127.0.0.1:${metricsPort}/metrics (node --require uvscope/register)`);
  console.log(`load: ${CONCURRENCY} concurrent clients for ${SECONDS} s`);
  console.log('  t   req/s  GetAddrInfoReqWrap  dns queued  dns queue wait  lookup mean  loop delay p99');

  let done = 0;
  const stopAt = Date.now() + SECONDS * 1000;
  const client = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const loops = Array.from({ length: CONCURRENCY }, async () => {
    while (Date.now() < stopAt) {
      await new Promise((resolve) => http.get({ host: '127.0.0.1', port: appPort, agent: client }, (res) => {
        res.resume();
        res.on('end', resolve);
      }).on('error', resolve));
      done++;
    }
  });

  let last = { done: 0, samples: [] };
  for (let t = 1; t <= SECONDS; t++) {
    await new Promise((r) => setTimeout(r, 1000));
    const samples = parsePrometheus(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
    const get = (name, labels = {}) => sum(samples, name, labels);
    const delta = (name, labels = {}) => get(name, labels) - sum(last.samples, name, labels);
    const waitCount = delta('nodejs_uv_threadpool_queue_wait_seconds_count', { queue: 'dns' });
    const wait = waitCount ? delta('nodejs_uv_threadpool_queue_wait_seconds_sum', { queue: 'dns' }) / waitCount : NaN;
    const lookups = delta('dns_lookup_duration_seconds_count');
    const lookupMean = lookups ? delta('dns_lookup_duration_seconds_sum') / lookups : NaN;
    console.log([
      String(t).padStart(3),
      String(done - last.done).padStart(7),
      String(get('nodejs_uv_requests_active', { type: 'GetAddrInfoReqWrap' })).padStart(19),
      String(get('nodejs_uv_threadpool_queued', { kind: 'dns' })).padStart(11),
      ms(wait).padStart(15),
      ms(lookupMean).padStart(12),
      ms(get('nodejs_eventloop_delay_p99_seconds')).padStart(15),
    ].join(' '));
    last = { done, samples };
  }
  await Promise.all(loops);
  client.destroy();
  process.kill(app.pid, 'SIGTERM');
  await new Promise((r) => app.once('exit', r));
  upstream.close();
}

function sum(samples, name, labels) {
  let total = 0;
  for (const s of samples) {
    if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) total += s.value;
  }
  return total;
}

function ms(seconds) {
  return Number.isFinite(seconds) ? `${(seconds * 1000).toFixed(1)} ms` : '-';
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
