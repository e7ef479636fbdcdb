'use strict';

const diagnosticsChannel = require('diagnostics_channel');
const { Histogram } = require('../core/histogram');
const { reportError } = require('../core/errors');
const { creatingOwnConnection, isOwnRequest } = require('../core/own-io');
const { subscribed: CHANNELS, safeSubscriber } = require('../core/channels');
const { injectFault } = require('../core/faults');

// Hostnames kept per-host for keep-alive evidence.
const MAX_HOSTS = 100;
// The points' attributes, the same frozen objects every sample.
const PHASE_DNS = Object.freeze({ 'nodejs.net.connect.phase': 'dns' });
const PHASE_TCP = Object.freeze({ 'nodejs.net.connect.phase': 'tcp' });
// Where its errors are counted and reported (lib/core/errors.js).
const COMPONENT = 'sampler:connections';

/** Upper bounds for outgoing connect phases (DNS lookup, TCP handshake). */
const CONNECT_BUCKETS = Object.freeze([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 4, 6, 9, 11, 20, 30]);

/** @type {readonly import('./metric-def').MetricDef[] | null} */
let METRICS = null;

// What it produces, made when the catalog first reads them (at the agent's second phase): the
// preload, which creates this sampler, does not load metric-def.js.
function metrics() {
  if (METRICS) return METRICS;
  const { metricDef } = require('./metric-def');
  METRICS = Object.freeze([
    metricDef('nodejs.net.connect.duration', 'histogram', 's', ['nodejs.net.connect.phase'],
      'Outgoing TCP connections: time from the socket\'s creation to its lookup event (phase dns) and from there to connect (phase tcp; from creation when no lookup was needed).',
      CONNECT_BUCKETS),
    metricDef('nodejs.http.client.requests', 'counter', '{request}', ['nodejs.http.client', 'nodejs.http.connection.reused'],
      'Outgoing HTTP requests by client (http: http/https modules; fetch: undici) and whether they reused a kept-alive connection.'),
  ]);
  return METRICS;
}

/**
 * Outgoing connections and requests: how long each TCP connect takes and how much of it is the
 * DNS lookup (socket 'lookup' and 'connect' events of every net client socket), and whether
 * http/https requests and fetch (undici) reuse connections (keep-alive).
 *
 * A request counts as new only when the socket it is sent on has carried no request before, i.e.
 * was created for it. That is read when the request gets its socket, not when it starts: a request
 * waiting in an agent's queue for a free socket has none yet (request.reusedSocket is still false
 * at http.client.request.start), and any agent, custom createConnection or agent: false is judged
 * the same way. undici publishes the socket with each request it sends
 * (undici:client:sendHeaders), so fetch and the undici package are judged the same way too.
 * Channels a Node version lacks are simply never published.
 */
class ConnectionsSampler {
  /** Also the key of its details in snapshot.details. */
  name = 'connections';
  #phases = { dns: new Histogram(CONNECT_BUCKETS), tcp: new Histogram(CONNECT_BUCKETS) };
  /**
   * Requests by client and reuse, in the order each series first counted (the points' order): one
   * object per series for the sampler's life, so a request allocates nothing.
   * @type {{ client: string, reused: boolean, value: number, attributes: Record<string, string> }[]}
   */
  #requests = [];
  /** @type {Map<string, { requests: number, newConnections: number }>} host -> figures for this interval */
  #hosts = new Map();
  /** Hosts with a request in this interval (those in #hosts with requests > 0), at most MAX_HOSTS. */
  #activeHosts = 0;
  /** Sockets that have carried a request: a request on one of these reuses a connection. */
  #used = new WeakSet();
  #interval = newInterval();
  /** @type {[string, (message: any, name: string | symbol) => void][]} */
  #subscribed = [];
  /** The 'socket' listener of a request queued in its agent (`this` is the request); one for all. */
  #onSocket;

  constructor() {
    const sampler = this;
    this.#onSocket = /** @this {import('http').ClientRequest} */ function (socket) {
      try {
        if (socket && typeof socket === 'object') sampler.#count('http', socket, this.host);
      } catch (err) {
        reportError(COMPONENT, err);
      }
    };
    const handlers = {
      [CHANNELS.netClientSocket]: (message) => this.#onNetSocket(message),
      [CHANNELS.httpClientRequestStart]: (message) => this.#onRequestStart(message),
      [CHANNELS.undiciClientSendHeaders]: (message) => this.#onSendHeaders(message),
    };
    for (const [name, handler] of Object.entries(handlers)) {
      const safe = safeSubscriber(COMPONENT, (message) => {
        injectFault('channel:connections');
        handler(message);
      });
      diagnosticsChannel.subscribe(name, safe);
      this.#subscribed.push([name, safe]);
    }
  }

  /** One request sent on `socket`: new unless the socket carried one before. */
  #count(client, socket, host) {
    const reused = this.#used.has(socket);
    if (!reused) this.#used.add(socket);
    this.#seriesOf(client, reused).value++;
    this.#interval.requests++;
    if (!reused) this.#interval.newConnections++;
    if (!host) return;
    let h = this.#hosts.get(host);
    if (!h || h.requests === 0) {
      if (this.#activeHosts >= MAX_HOSTS) return;
      if (!h) this.#hosts.set(host, (h = { requests: 0, newConnections: 0 }));
      this.#activeHosts++;
    }
    h.requests++;
    if (!reused) h.newConnections++;
  }

  /** The series of (client, reused), created at its first request. */
  #seriesOf(client, reused) {
    const list = this.#requests;
    for (let i = 0; i < list.length; i++) if (list[i].client === client && list[i].reused === reused) return list[i];
    const s = { client, reused, value: 0, attributes: Object.freeze({ 'nodejs.http.client': client, 'nodejs.http.connection.reused': String(reused) }) };
    list.push(s);
    return s;
  }

  /** net.client.socket: times the socket's lookup and connect phases. */
  #onNetSocket({ socket }) {
    if (creatingOwnConnection()) return; // the agent's own exporter, not the app
    const start = process.hrtime.bigint();
    let lookedUp = null;
    this.#interval.connections++;
    socket.once('lookup', () => {
      lookedUp = process.hrtime.bigint();
    });
    socket.once('connect', () => {
      if (!socket.remoteFamily) return; // a pipe, not TCP
      const now = process.hrtime.bigint();
      if (lookedUp !== null) this.#phases.dns.observe(Number(lookedUp - start) / 1e9);
      const seconds = Number(now - start) / 1e9;
      this.#phases.tcp.observe(Number(now - (lookedUp !== null ? lookedUp : start)) / 1e9);
      this.#interval.connectSeconds += seconds;
    });
  }

  /** http.client.request.start: counts the request once it has its socket. */
  #onRequestStart({ request }) {
    if (isOwnRequest(request)) return;
    // The channel fires when the request is finished: usually its socket is assigned by then;
    // a request queued in its agent gets one later ('socket' is emitted for new and reused).
    if (request.socket) this.#count('http', request.socket, request.host);
    else request.once('socket', this.#onSocket);
  }

  /** undici:client:sendHeaders: a fetch (or undici) request written to its connection. */
  #onSendHeaders({ request, socket }) {
    if (socket && typeof socket === 'object') this.#count('fetch', socket, hostOf(request && request.origin));
  }

  /** @returns {import('./index').RawPoint[]} */
  sample() {
    const out = [];
    if (this.#phases.dns.count > 0) out.push({ name: 'nodejs.net.connect.duration', attributes: PHASE_DNS, histogram: this.#phases.dns.snapshot() });
    if (this.#phases.tcp.count > 0) out.push({ name: 'nodejs.net.connect.duration', attributes: PHASE_TCP, histogram: this.#phases.tcp.snapshot() });
    const list = this.#requests;
    for (let i = 0; i < list.length; i++) out.push({ name: 'nodejs.http.client.requests', attributes: list[i].attributes, value: list[i].value });
    return out;
  }

  /**
   * Requests and new connections (in all and per host) and connections made with the seconds
   * they took to connect (DNS included), in the interval since the last endInterval(); no side
   * effect.
   * @returns {ConnectionsDetails}
   */
  details() {
    const i = this.#interval;
    /** @type {ConnectionsDetails['hosts']} */
    const hosts = [];
    this.#hosts.forEach((h, host) => {
      if (h.requests > 0) hosts.push({ host, requests: h.requests, newConnections: h.newConnections });
    });
    return { connections: i.connections, connectSeconds: i.connectSeconds, requests: i.requests, newConnections: i.newConnections, hosts };
  }

  /**
   * Start a new interval: the figures zeroed in place, not made again (an object each, and a new
   * table for the hosts' Map, that lived until the next sample: ~300 bytes a sample surviving V8's
   * scavenges in between). A host with no request in the interval that ends is dropped, so the Map
   * holds at most the last interval's hosts and this one's.
   */
  endInterval() {
    const i = this.#interval;
    i.connections = 0;
    i.connectSeconds = 0;
    i.requests = 0;
    i.newConnections = 0;
    this.#hosts.forEach(this.#resetHost);
    this.#activeHosts = 0;
  }

  /** @type {(h: { requests: number, newConnections: number }, host: string, hosts: Map<string, any>) => void} */
  #resetHost = (h, host, hosts) => {
    if (h.requests === 0) hosts.delete(host);
    h.requests = 0;
    h.newConnections = 0;
  };

  /** Drops its channel subscriptions. */
  close() {
    for (const [name, fn] of this.#subscribed) diagnosticsChannel.unsubscribe(name, fn);
  }
}

/**
 * The connections sampler (see ConnectionsSampler); it subscribes to its channels at once.
 * @returns {ConnectionsSampler}
 */
function createConnectionsSampler() {
  return new ConnectionsSampler();
}

function newInterval() {
  return { connections: 0, connectSeconds: 0, requests: 0, newConnections: 0 };
}

/**
 * snapshot.details.connections: figures for the interval since the last sample.
 * @typedef {object} ConnectionsDetails
 * @property {number} connections outgoing TCP connections the app opened
 * @property {number} connectSeconds seconds those connections took to connect (DNS included)
 * @property {number} requests outgoing HTTP requests (http/https and fetch)
 * @property {number} newConnections requests whose socket was created for them
 * @property {{ host: string, requests: number, newConnections: number }[]} hosts per host (at most 100)
 */

function hostOf(origin) {
  try {
    return new URL(String(origin)).hostname;
  } catch {
    return null;
  }
}

/** @type {import('./index').Source} */
const source = Object.freeze({
  name: 'connections',
  early: true,
  settings: Object.freeze([]),
  get metrics() {
    return metrics();
  },
  create: () => createConnectionsSampler(),
});

module.exports = { source, CONNECT_BUCKETS, createConnectionsSampler };
