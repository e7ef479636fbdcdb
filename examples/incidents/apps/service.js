'use strict';
// wolt/zooz: an HTTP service that calls an upstream for every request, by hostname, with
// keep-alive off (one lookup and one connection per request). UPSTREAM_HOSTS: comma list, used
// round-robin. BUSY_MS: CPU time burnt per request on the event loop (zooz).
const http = require('http');

const hosts = (process.env.UPSTREAM_HOSTS || 'localhost').split(',');
const upstreamPort = Number(process.env.UPSTREAM_PORT);
const busyMs = Number(process.env.BUSY_MS || 0);
const agent = new http.Agent({ keepAlive: false });
let next = 0;

// busyMs of this thread's CPU time (not wall time, which an overloaded host stretches).
const cpuMs = typeof process.threadCpuUsage === 'function'
  ? () => { const u = process.threadCpuUsage(); return (u.user + u.system) / 1000; }
  : () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
function burnCpu(ms) {
  const end = cpuMs() + ms;
  let x = 0;
  while (cpuMs() < end) for (let i = 0; i < 1000; i++) x += Math.sqrt(i);
  return x;
}

const server = http.createServer((req, res) => {
  if (busyMs) burnCpu(busyMs); // a CPU-bound handler: render, JSON, crypto...
  const host = hosts[next++ % hosts.length];
  http.get({ host, port: upstreamPort, path: '/', agent }, (up) => {
    up.resume();
    up.on('end', () => res.end('ok\n'));
  }).on('error', (err) => {
    res.statusCode = 502;
    res.end(`${err.code}\n`);
  });
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
