'use strict';
// A small HTTP service that calls an upstream by hostname for every request, with keep-alive
// off, so every request costs a dns.lookup (the shape of the wolt and klarna write-ups).
// UPSTREAM_HOST names the upstream; it answers on UPSTREAM_PORT (127.0.0.1).
const http = require('http');

const upstreamHost = process.env.UPSTREAM_HOST || 'localhost';
const upstreamPort = Number(process.env.UPSTREAM_PORT);
const port = Number(process.env.APP_PORT || 0);

const agent = new http.Agent({ keepAlive: false });
const server = http.createServer((req, res) => {
  http.get({ host: upstreamHost, port: upstreamPort, path: '/', agent }, (up) => {
    up.resume();
    up.on('end', () => res.end('ok\n'));
  }).on('error', (err) => {
    res.statusCode = 502;
    res.end(`${err.code}\n`);
  });
});
server.listen(port, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
