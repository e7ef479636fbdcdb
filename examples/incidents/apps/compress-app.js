'use strict';
// starve: a service whose GET /export compresses a report with zlib.deflate at level 9
// (COMPRESS_ON=pool, the default: each call a short CPU-bound job on the libuv threadpool) or
// with deflateSync in worker_threads sized to the CPU budget (COMPRESS_ON=worker, the fix).
// Besides the requests, COMPRESS_JOBS jobs are kept in flight all the time (a steady stream of
// short jobs; default 0), so with more threads than CPUs the pool's threads take turns on the CPU.
// GET /page answers at once; the app re-resolves its upstream (localhost, answered from
// /etc/hosts) every 100 ms, a pool job too, and GET /lookups gives those lookups' times.
// BUSY_LOOP=1 burns the loop's CPU in 20 ms slices (a busy, healthy server: one thread busy,
// nobody waiting).
const dns = require('dns');
const http = require('http');
const zlib = require('zlib');
// COMPRESS_ON=worker's threads (the fix), the same pool as login-app.js's
const { workerPool } = require('./worker-pool');

const JOBS = Number(process.env.COMPRESS_JOBS || 0);
const LEVEL = Number(process.env.COMPRESS_LEVEL || 9);
const compressOn = process.env.COMPRESS_ON || 'pool';
const upstreamHost = process.env.UPSTREAM_HOST || 'localhost';
// Every JOB_GAP_MS each stream rests before its next job (0: none): occasional jobs.
const JOB_GAP_MS = Number(process.env.JOB_GAP_MS || 0);

// A report that compresses slowly at level 9: text with some repetition (~32 KB, ~5 ms a job on an
// idle core; REPORT_SCALE times that).
const words = ['latency', 'threadpool', 'resolver', 'budget', 'thread', 'socket', 'handle', 'queue', 'request', 'answer'];
let seed = 7;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const REPORT = Buffer.from(Array.from({ length: 3000 * Number(process.env.REPORT_SCALE || 1) }, () => `${words[Math.floor(rand() * words.length)]}${Math.floor(rand() * 1000)}`).join(' '));

const compress = compressOn === 'worker' ? workerCompressor() : (buf) => new Promise((resolve, reject) => {
  zlib.deflate(buf, { level: LEVEL }, (err, out) => (err ? reject(err) : resolve(out)));
});

// The fix: the same compression, synchronously, in worker threads sized to the CPU budget.
function workerCompressor() {
  const run = workerPool("({ buf, level }) => require('zlib').deflateSync(Buffer.from(buf), { level })");
  return (buf) => run({ buf, level: LEVEL });
}

// The export route's work, as a steady stream: JOBS compressions in flight.
function exportReport() {
  return compress(REPORT).then(() => {
    if (JOB_GAP_MS > 0) setTimeout(exportReport, JOB_GAP_MS);
    else setImmediate(exportReport);
  }, () => {});
}

function burnLoop() {
  const until = Date.now() + 20;
  while (Date.now() < until);
  setImmediate(burnLoop);
}

const lookups = [];
const refresh = () => {
  const start = process.hrtime.bigint();
  dns.lookup(upstreamHost, { family: 4 }, () => lookups.push(Number(process.hrtime.bigint() - start) / 1e9));
};
setInterval(refresh, 100).unref();

const server = http.createServer((req, res) => {
  const route = req.url.split('?')[0];
  if (route === '/lookups') {
    // the lookups' own times since the last call, as the app measured them (call to callback)
    res.end(JSON.stringify(lookups.splice(0)));
    return;
  }
  if (route === '/export') {
    compress(REPORT).then((out) => res.end(`${out.length}\n`), () => {
      res.statusCode = 500;
      res.end();
    });
    return;
  }
  res.end('page\n');
});
server.listen(0, '127.0.0.1', () => {
  // started once listening, so the agent's first sample sees the app as it runs
  if (process.env.BUSY_LOOP === '1') burnLoop();
  for (let i = 0; i < JOBS; i++) exportReport();
  console.log(JSON.stringify({ port: server.address().port, pid: process.pid }));
});
