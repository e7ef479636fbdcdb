'use strict';
// klarna: an app that sends metrics with a StatsD client configured with a hostname. hot-shots
// then resolves the host for every datagram (cacheDns is off by default).
const StatsD = require('hot-shots');

const rate = Number(process.env.METRICS_PER_SECOND || 2000);
const client = new StatsD({ host: process.env.STATSD_HOST, port: Number(process.env.STATSD_PORT), errorHandler: () => {} });
setInterval(() => {
  for (let i = 0; i < rate / 100; i++) client.increment('checkout.requests', 1, ['route:/pay']);
}, 10);
console.log(JSON.stringify({ rate }));
