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
const os = require('os');
const zlib = require('zlib');
const { Worker } = require('worker_threads');

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
  const code = `const { parentPort } = require('worker_threads'); const zlib = require('zlib');
    parentPort.on('message', ({ id, buf, level }) => parentPort.postMessage({ id, out: zlib.deflateSync(Buffer.from(buf), { level }) }));`;
  const count = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  const idle = [];
  const waiting = [];
  const callbacks = new Map();
  let nextId = 0;
  for (let i = 0; i < count; i++) {
    const w = new Worker(code, { eval: true });
    w.unref();
    w.on('message', ({ id, out }) => {
      callbacks.get(id)(out);
      callbacks.delete(id);
      const job = waiting.shift();
      if (job) w.postMessage(job);
      else idle.push(w);
    });
    idle.push(w);
  }
  return (buf) => new Promise((resolve) => {
    const job = { id: nextId++, buf, level: LEVEL };
    callbacks.set(job.id, resolve);
    const w = idle.pop();
    if (w) w.postMessage(job);
    else waiting.push(job);
  });
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
