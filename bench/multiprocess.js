'use strict';

// The cost of serving several processes at one endpoint (lib/endpoint/multiprocess.js).
//
//   node bench/multiprocess.js [--hosts 100] [--processes 8,32,128]
//
// In this process: an agent with the Prometheus exporter on a free port (the holder), sampled once
// after a few lookups of localhost. A member's push is that snapshot plus --hosts synthetic
// dns.lookup.duration histograms (one per hostname, as a process with that many kept names has;
// no lookup is made for them). Measured (process.hrtime.bigint(), medians):
//   - a member's cost per interval: building the push body (JSON.stringify), and its size;
//   - the holder's cost per push received (HTTP over loopback, JSON.parse, checks), as a share of a
//     core at the default 1 s interval;
//   - one scrape (GET /metrics by curl) with 0 and N other processes, the ratio to 0, and the
//     longest event-loop block of the holder meanwhile (monitorEventLoopDelay, 1 ms resolution);
//   - the holder's heap for N other processes (after gc()).
// Members claim a 60 s interval, so none expires (3 intervals) during the run.
// Bounded: a watchdog aborts after 60 s. Everything is closed at the end.

const path = require('path');
const http = require('http');
const dns = require('dns');
const v8 = require('v8');
const vm = require('vm');
const { execFile } = require('child_process');
const { monitorEventLoopDelay } = require('perf_hooks');

const REPO = path.resolve(__dirname, '..');
const uvscope = require(path.join(REPO, 'lib', 'index.js'));
const { PUSH_PATH, PUSH_HEADER } = require(path.join(REPO, 'lib', 'endpoint', 'multiprocess'));
const { DNS_BUCKETS } = require(path.join(REPO, 'lib', 'snapshot', 'catalog.js'));
const { watchdog } = require(path.join(REPO, 'support', 'processes.js'));

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

function parseArgs(argv) {
  const opts = { hosts: 100, processes: [8, 32, 128] };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(hosts|processes)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`usage: node bench/multiprocess.js [--hosts 100] [--processes 8,32,128]`);
    const raw = m[2] !== undefined ? m[2] : argv[++i];
    if (m[1] === 'hosts') opts.hosts = Number(raw);
    else opts.processes = raw.split(',').map(Number);
  }
  return opts;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function time(fn, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    fn();
    out.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return median(out);
}

// curl in a child process, so the scrape's client work is not on this process's loop.
function scrape(port) {
  return new Promise((resolve, reject) => {
    execFile('curl', ['-s', '-o', '/dev/null', '-w', '%{size_download} %{time_total}', `http://127.0.0.1:${port}/metrics`], (err, stdout) => {
      if (err) return reject(err);
      const [bytes, seconds] = stdout.trim().split(' ').map(Number);
      resolve({ bytes, ms: seconds * 1000 });
    });
  });
}

function post(port, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: PUSH_PATH, method: 'POST', agent: false, headers: { [PUSH_HEADER]: '1', 'Content-Type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`push answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const timer = watchdog('bench/multiprocess.js', 60000);

  const agent = uvscope.start({ exporters: ['prometheus'], intervalMs: 3600000, prometheus: { port: 0, maxProcesses: 4096 } });
  const exporter = agent.exporters.find((e) => e.name === 'prometheus');
  const { port } = await exporter.ready;
  await Promise.all(Array.from({ length: 5 }, () => new Promise((r) => dns.lookup('localhost', r))));
  const own = agent.sampleNow();

  const counts = DNS_BUCKETS.map((_, i) => (i % 3)).concat([0]);
  const synthetic = Array.from({ length: opts.hosts }, (_, i) => ({
    name: 'dns.lookup.duration',
    attributes: { 'dns.question.name': `host-${i}.service.internal`, 'error.type': '' },
    histogram: { bounds: DNS_BUCKETS, counts, sum: 1.25, count: counts.reduce((a, b) => a + b, 0) },
  }));
  const message = (pid) => ({ v: '1', pid, instance: `bench-${pid}`, intervalMs: 60000, time: Date.now(), points: [...own.points, ...synthetic], findings: own.findings });

  const stringifyMs = time(() => JSON.stringify(message(1)), 200);
  const body = JSON.stringify(message(1));
  console.log(`member: one push body ${(body.length / 1024).toFixed(1)} KiB (${own.points.length} points + ${opts.hosts} hostnames), built in ${stringifyMs.toFixed(3)} ms (median of 200)`);

  // Scrapes by curl; the longest event-loop block of this (the holder's) process meanwhile.
  const render = async () => {
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const times = [];
    let bytes = 0;
    for (let i = 0; i < 12; i++) {
      const r = await scrape(port);
      times.push(r.ms);
      bytes = r.bytes;
    }
    loop.disable();
    return { ms: median(times.slice(2)), bytes, blockMs: loop.max / 1e6 };
  };

  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const alone = await render();
  console.log(`holder: scrape alone ${alone.ms.toFixed(2)} ms, ${(alone.bytes / 1024).toFixed(0)} KiB, longest loop block ${alone.blockMs.toFixed(1)} ms`);

  // The holder's cost per push received, measured on the wall clock of this one process.
  const pushTimes = [];
  for (let i = 0; i < 50; i++) {
    const b = JSON.stringify(message(100000));
    const t = process.hrtime.bigint();
    await post(port, b);
    pushTimes.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  const perPush = median(pushTimes);
  console.log(`holder: one push received and kept ${perPush.toFixed(2)} ms (median of 50, client and server in this process), ${(perPush / 10).toFixed(2)} % of a core per process at a 1 s interval`);

  let pid = 200000;
  for (const n of opts.processes) {
    const want = n;
    while (pid - 200000 < want) await post(port, JSON.stringify(message(pid++)));
    gc();
    const heap = process.memoryUsage().heapUsed;
    const r = await render();
    console.log(`holder: ${String(n).padStart(4)} other processes (+1 bench): scrape ${r.ms.toFixed(1)} ms (x${(r.ms / alone.ms).toFixed(0)} alone), ${(r.bytes / 1024 / 1024).toFixed(1)} MiB, longest loop block ${r.blockMs.toFixed(1)} ms; heap +${((heap - heap0) / 1024 / 1024).toFixed(1)} MiB (${((heap - heap0) / 1024 / (n + 1)).toFixed(0)} KiB per process)`);
  }
  await uvscope.stop();
  clearTimeout(timer);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
