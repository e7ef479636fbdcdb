'use strict';

const { metricDef } = require('../metric-def');

// The listen source's metrics, made when the catalog first reads them (at the agent's second
// phase): the preload, which creates this source, does not load this file.

const SERVER = ['server.address', 'server.port'];

/** @type {readonly import('../metric-def').MetricDef[]} */
const METRICS = Object.freeze([
  metricDef('nodejs.net.server.accept_queue', 'gauge', '{connection}', SERVER,
    'Connections the kernel accepted that wait in a listening socket\'s accept queue for the app\'s accept(), read at the sample (Linux: rx_queue of its LISTEN row in /proc/net/tcp or tcp6; TCP servers only). A sample right after a blocked loop sees the queue before the loop drains it (timers run before libuv polls), but a peak between samples is not seen: drops are counted by system.network.tcp.listen.drops.'),
  metricDef('nodejs.net.server.accept_queue.limit', 'gauge', '{connection}', SERVER,
    'The accept queue\'s limit: the backlog the app asked for (server.listen({ backlog }), Node\'s default 511) capped by net.core.somaxconn when it listened; past it the kernel drops the handshake\'s last ACK (or the SYN) and the client retransmits after 1 s, 3 s, 7 s.'),
  metricDef('system.network.tcp.listen.drops', 'counter', '{event}', ['linux.netstat.counter'],
    'The network namespace\'s TcpExt counters of /proc/net/netstat (every process of the namespace, a container\'s whole pod): ListenOverflows (a full accept queue), ListenDrops (those and other listen drops), TCPReqQFullDrop (SYNs dropped, SYN queue full), TCPReqQFullDoCookies and SyncookiesSent (SYN cookies instead); reported while the app listens on TCP.'),
]);

module.exports = { METRICS };
