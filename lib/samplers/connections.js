'use strict';

const diagnosticsChannel = require('diagnostics_channel');
const { Histogram } = require('../histogram');
const { CONNECT_BUCKETS } = require('../metrics');
const { reportError } = require('../report');
const { creatingOwnConnection, isOwnRequest } = require('../own-io');
const { subscribed: CHANNELS } = require('../channels');
const { injectFault } = require('../faults');

// Hostnames kept per-host for keep-alive evidence.
const MAX_HOSTS = 100;

/**
 * Outgoing connections and requests: how long each TCP connect takes and how much of it is the
 * DNS lookup (socket 'lookup' and 'connect' events of every net client socket), and whether
 * http/https requests and fetch reuse connections (keep-alive), from Node's diagnostics channels:
 * net.client.socket, http.client.request.start, undici:request:create, undici:client:connected.
 * Channels a Node version lacks are simply never published.
 */
function createConnectionsSampler() {
  const phases = { dns: new Histogram(CONNECT_BUCKETS), tcp: new Histogram(CONNECT_BUCKETS) };
  const requests = new Map(); // `${client}\0${reused}` -> count
  const hosts = new Map(); // host -> { requests, newConnections } for this interval
  let interval = { connections: 0, requests: 0, newConnections: 0 };

  const count = (client, reused, host) => {
    const key = `${client}\u0000${reused}`;
    requests.set(key, (requests.get(key) || 0) + 1);
    interval.requests++;
    if (!reused) interval.newConnections++;
    if (!host) return;
    let h = hosts.get(host);
    if (!h) {
      if (hosts.size >= MAX_HOSTS) return;
      hosts.set(host, (h = { requests: 0, newConnections: 0 }));
    }
    h.requests++;
    if (!reused) h.newConnections++;
  };

  const handlers = {
    [CHANNELS.netClientSocket]: ({ socket }) => {
      if (creatingOwnConnection()) return; // the agent's own exporter, not the app
      const start = process.hrtime.bigint();
      let lookedUp = null;
      interval.connections++;
      socket.once('lookup', () => {
        lookedUp = process.hrtime.bigint();
      });
      socket.once('connect', () => {
        if (!socket.remoteFamily) return; // a pipe, not TCP
        const now = process.hrtime.bigint();
        if (lookedUp !== null) phases.dns.observe(Number(lookedUp - start) / 1e9);
        phases.tcp.observe(Number(now - (lookedUp !== null ? lookedUp : start)) / 1e9);
      });
    },
    [CHANNELS.httpClientRequestStart]: ({ request }) => {
      if (!isOwnRequest(request)) count('http', Boolean(request.reusedSocket), request.host);
    },
    [CHANNELS.undiciRequestCreate]: ({ request }) => {
      // fetch (undici) announces new connections separately; count its requests as reused here
      // and correct with each connection below.
      count('fetch', true, hostOf(request.origin));
    },
    [CHANNELS.undiciClientConnected]: ({ connectParams }) => {
      const host = connectParams && connectParams.hostname;
      const key = `fetch\u0000true`;
      if (requests.get(key) > 0) requests.set(key, requests.get(key) - 1);
      requests.set('fetch\u0000false', (requests.get('fetch\u0000false') || 0) + 1);
      interval.newConnections++;
      const h = host && hosts.get(host);
      if (h) h.newConnections++;
    },
  };
  const subscribed = [];
  for (const [name, handler] of Object.entries(handlers)) {
    const safe = (message) => {
      try {
        injectFault('channel:connections');
        handler(message);
      } catch (err) {
        reportError('sampler:connections', err);
      }
    };
    diagnosticsChannel.subscribe(name, safe);
    subscribed.push([name, safe]);
  }

  return {
    name: 'connections',
    sample() {
      const out = [];
      for (const [phase, h] of Object.entries(phases)) {
        if (h.count > 0) out.push({ name: 'nodejs.net.connect.duration', attributes: { 'nodejs.net.connect.phase': phase }, histogram: h.snapshot() });
      }
      for (const [key, value] of requests) {
        const [client, reused] = key.split('\u0000');
        out.push({ name: 'nodejs.http.client.requests', attributes: { 'nodejs.http.client': client, 'nodejs.http.connection.reused': reused }, value });
      }
      return out;
    },
    /**
     * Requests and new connections, in all and per host, in the interval since the last
     * endInterval(); no side effect.
     * @returns {ConnectionsDetails}
     */
    details() {
      return { ...interval, hosts: [...hosts].map(([host, h]) => ({ host, ...h })) };
    },
    /** Start a new interval. */
    endInterval() {
      interval = { connections: 0, requests: 0, newConnections: 0 };
      hosts.clear();
    },
    close() {
      for (const [name, fn] of subscribed) diagnosticsChannel.unsubscribe(name, fn);
    },
  };
}

/**
 * snapshot.details.connections: figures for the interval since the last sample.
 * @typedef {object} ConnectionsDetails
 * @property {number} connections outgoing TCP connections the app opened
 * @property {number} requests outgoing HTTP requests (http/https and fetch)
 * @property {number} newConnections requests that opened a new connection
 * @property {{ host: string, requests: number, newConnections: number }[]} hosts per host (at most 100)
 */

function hostOf(origin) {
  try {
    return new URL(String(origin)).hostname;
  } catch {
    return null;
  }
}

module.exports = { createConnectionsSampler };
