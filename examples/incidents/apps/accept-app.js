'use strict';
// acceptq: an HTTP service. GET /block holds the event loop for BLOCK_MS (a synchronous job: a
// big JSON, a sync read, a regex), the rest answer at once or after BUSY_MS of CPU (a busy but
// healthy service). BACKLOG: listen()'s backlog (Node's default 511 when unset).
const http = require('http');

const blockMs = Number(process.env.BLOCK_MS || 1500);
const busyMs = Number(process.env.BUSY_MS || 0);
const backlog = process.env.BACKLOG ? Number(process.env.BACKLOG) : undefined;

function spin(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) x += Math.sqrt(x + 1);
  return x;
}

const server = http.createServer((req, res) => {
  if (req.url === '/block') spin(blockMs);
  else if (busyMs) spin(busyMs);
  res.end('ok\n');
});
server.listen({ port: 0, host: '127.0.0.1', backlog }, () => console.log(JSON.stringify({ port: server.address().port })));
