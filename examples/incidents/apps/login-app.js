'use strict';
// crypto: a service whose login route hashes passwords with crypto.pbkdf2 (HASH_ON=pool, the
// default: on the libuv threadpool) or with pbkdf2Sync in worker_threads (HASH_ON=worker, the
// fix). Its profile route reads a template file (a threadpool job) and calls an upstream on
// keep-alive, whose address the app re-resolves every 250 ms (as database and service-discovery
// clients refresh theirs): each lookup is a threadpool job too.
const crypto = require('crypto');
const dns = require('dns');
const fs = require('fs');
const http = require('http');
const { workerPool } = require('./worker-pool');

const ITERATIONS = Number(process.env.HASH_ITERATIONS || 100000);
const hashOn = process.env.HASH_ON || 'pool';
const upstreamHost = process.env.UPSTREAM_HOST || 'localhost';
const upstreamPort = Number(process.env.UPSTREAM_PORT);
const template = __filename; // any file will do: the read is what matters

const SALT = 'lab-salt';
const hash = hashOn === 'worker' ? workerHasher() : (password) => new Promise((resolve, reject) => {
  crypto.pbkdf2(password, SALT, ITERATIONS, 64, 'sha512', (err, key) => (err ? reject(err) : resolve(key)));
});

// The fix: the same hash, synchronously, in a few worker threads (one per core) of its own.
function workerHasher() {
  const run = workerPool("({ password, salt, iterations }) => require('crypto').pbkdf2Sync(password, salt, iterations, 64, 'sha512')");
  return (password) => run({ password, salt: SALT, iterations: ITERATIONS });
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 4 });
let upstreamAddress = null;
const refresh = () => dns.lookup(upstreamHost, { family: 4 }, (err, address) => {
  if (!err) upstreamAddress = address;
});
refresh();
setInterval(refresh, 250).unref();

const server = http.createServer((req, res) => {
  const route = req.url.split('?')[0];
  if (req.method === 'POST' && route === '/login') {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => hash(body || 'hunter2').then(() => res.end('welcome\n'), () => {
      res.statusCode = 500;
      res.end();
    }));
    return;
  }
  if (req.method === 'GET' && route === '/profile') {
    fs.readFile(template, 'utf8', (err, html) => {
      if (err) {
        res.statusCode = 500;
        return res.end();
      }
      http.get({ host: upstreamAddress || '127.0.0.1', port: upstreamPort, path: '/', agent: keepAlive }, (up) => {
        up.resume();
        up.on('end', () => res.end(html.slice(0, 64)));
      }).on('error', (e) => {
        res.statusCode = 502;
        res.end(`${e.code}\n`);
      });
    });
    return;
  }
  res.statusCode = 404;
  res.end();
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
