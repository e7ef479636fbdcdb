'use strict';

// The listen source's cost per sample: its reads of /proc/net/tcp (up to the app's LISTEN rows)
// and /proc/net/netstat, against a namespace with many other listeners and many established
// connections (which the read must not pay for), and next to reading the whole /proc/net/tcp.
//
//   node bench/listen-cost.js [--listeners 200] [--connections 2000] [--samples 2000]
//
// Re-runs itself in a network namespace of its own (unshare -n, root) so that the rows are the
// bench's own; elsewhere it runs in the machine's namespace and says so. Its servers and
// connections live in this process (2 x connections + listeners fds: under `ulimit -n`).
// Bounded: a watchdog exits after 60 s; the defaults take a few seconds.

const fs = require('fs');
const net = require('net');
const { spawnSync } = require('child_process');
const { createListenSampler } = require('../lib/sources/listen/sampler');

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? def : Number(process.argv[i + 1]);
};
const LISTENERS = arg('listeners', 200);
const CONNECTIONS = arg('connections', 2000);
const SAMPLES = arg('samples', 2000);

if (!process.env.UVSCOPE_BENCH_NETNS && process.getuid && process.getuid() === 0) {
  const r = spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up && exec "$@"', 'bench', process.execPath, __filename, ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, UVSCOPE_BENCH_NETNS: '1' } });
  if (!r.error) process.exit(r.status === null ? 1 : r.status);
}
setTimeout(() => {
  console.error('watchdog: 60 s');
  process.exit(1);
}, 60000).unref();

const listen = (port = 0) => new Promise((resolve) => {
  const s = net.createServer((c) => held.push(c));
  s.listen({ port, host: '127.0.0.1', backlog: 4096 }, () => resolve(s));
});
const held = [];

function time(fn, n) {
  for (let i = 0; i < 100; i++) fn(); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - start) / n / 1000; // us per call
}

async function main() {
  console.log(`namespace: ${process.env.UVSCOPE_BENCH_NETNS ? 'its own (unshare -n)' : 'the machine\'s (not root, or unshare failed): other sockets count too'}; Node ${process.version}`);
  // Other processes' listeners, listening before the app's: the app's row may come last.
  const others = [];
  for (let i = 0; i < LISTENERS; i++) others.push(await listen());
  const app = await listen();
  // As shipped (the queues read at every sample only where that is cheap), and reading them at
  // every sample (what one read costs), and the counters alone.
  const sampler = createListenSampler({ handles: () => [app] });
  const always = createListenSampler({ handles: () => [app], cheapMs: Infinity });
  const netstat = require('../lib/sources/listen/proc').openNetstat();
  const counters = new Float64Array(5);
  const tick = { resources: new Map([['TCPServerWrap', 1]]) };
  const measure = (label) => {
    const us = time(() => sampler.sample(tick), SAMPLES);
    const read = time(() => always.sample(tick), Math.min(SAMPLES, 500));
    const ns = time(() => netstat.read(counters), SAMPLES);
    const whole = time(() => fs.readFileSync('/proc/net/tcp'), Math.min(SAMPLES, 200));
    const size = fs.readFileSync('/proc/net/tcp').length;
    const d = sampler.details().queuesRead;
    console.log(`${label}: sample() ${us.toFixed(1)} us as shipped (queues read at every sample: ${d.everySample}); ${read.toFixed(1)} us reading the queues every time; /proc/net/netstat alone ${ns.toFixed(1)} us; the whole /proc/net/tcp (${(size / 1024).toFixed(0)} KiB) ${whole.toFixed(1)} us`);
  };
  always.sample(tick);
  sampler.sample(tick);
  measure(`${LISTENERS} other listeners, no connection`);
  // Established connections: listed after every listener.
  const clients = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    clients.push(net.connect(others[i % others.length].address().port, '127.0.0.1'));
    if (i % 200 === 199) await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 500));
  measure(`${LISTENERS} other listeners, ${CONNECTIONS} connections (${2 * CONNECTIONS} rows)`);
  const d = sampler.details();
  console.log(`read: queue ${d.listeners[0].queue}, limit ${d.listeners[0].limit}, ListenOverflows ${d.counters.ListenOverflows}`);
  for (const c of clients) c.destroy();
  for (const c of held) c.destroy();
  for (const s of [...others, app]) s.close();
  sampler.close();
  always.close();
  netstat.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
