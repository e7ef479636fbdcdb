'use strict';
// throttled: a reporting service whose GET /report compresses a 1 MiB report at gzip level 9
// (zlib on the libuv threadpool) and renders it first (BUSY_MS of CPU on the event loop). Run by
// the lab in a cgroup with a CPU quota of 0.5 CPU: each request needs more CPU than the quota
// gives the requests in flight.
const http = require('http');
const zlib = require('zlib');

const busyMs = Number(process.env.BUSY_MS || 10);
// A report: text that compresses, but not for free (numbers change line to line).
const lines = [];
for (let i = 0, size = 0; size < 1024 * 1024; i++) {
  const line = `row ${i}, account ${(i * 7919) % 10007}, amount ${((i * 104729) % 100003) / 100}, status ${i % 3 ? 'paid' : 'open'}\n`;
  lines.push(line);
  size += line.length;
}
const report = Buffer.from(lines.join(''));

// busyMs of this thread's CPU time (not wall time, which the quota stretches).
const cpuMs = typeof process.threadCpuUsage === 'function'
  ? () => { const u = process.threadCpuUsage(); return (u.user + u.system) / 1000; }
  : () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
function render(ms) {
  const end = cpuMs() + ms;
  let x = 0;
  while (cpuMs() < end) for (let i = 0; i < 1000; i++) x += Math.sqrt(i);
  return x;
}

const server = http.createServer((req, res) => {
  render(busyMs);
  zlib.gzip(report, { level: 9 }, (err, body) => {
    if (err) {
      res.statusCode = 500;
      res.end();
      return;
    }
    res.setHeader('content-encoding', 'gzip');
    res.end(body);
  });
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
