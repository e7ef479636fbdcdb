'use strict';

const { defineRule } = require('../rule');

/**
 * http-no-keepalive: requests to one host that nearly all open a new connection, so each pays for
 * a lookup and a handshake.
 */
module.exports = defineRule({
  id: 'http-no-keepalive',
  limits: {
    keepAliveMinRequests: 20, // requests to one host in the window before judging its reuse
    newConnectionShare: 0.9, // at least this share of them opened a new connection
  },
  docs: {
    means: 'HTTP requests to a host each open a new connection: keep-alive is off',
    fires: (l) => `${l.keepAliveMinRequests}+ requests to a host of which ${Math.round(l.newConnectionShare * 100)} %+ opened a new connection`,
    impact: 'what opening those connections cost (lookup and handshake, at the mean connect time) per second of the window; `requests`: the new connections',
    advice: 'keep-alive agents, reuse undici dispatchers; reports lookups per new connection',
    example: 'the lab\'s `zooz` incident (an upstream client without keep-alive): "63 of 63 requests to localhost opened a new connection: keep-alive is off, so each request pays for a DNS lookup and a TCP (and TLS) handshake."',
  },
  interval: keptConnections,
  // Nothing to fire on: no new connections (their sum over the window is what the gate reads).
  quiet: (s, lim) => lim.newConnectionShare * lim.keepAliveMinRequests > 0 && newConnections([s]) === 0,
  evaluate(window, lim) {
    // The gate, every sample: a loop that allocates nothing. A host is judged with
    // keepAliveMinRequests requests, newConnectionShare of them new: fewer new connections to all
    // hosts together than that share of that many cannot fire.
    if (newConnections(window) < lim.newConnectionShare * lim.keepAliveMinRequests * (1 - 1e-9)) return null;
    // What it says (lib/findings/found/http-no-keepalive.js) loads the first time the gate passes.
    return require('../found/http-no-keepalive').found(window, lim);
  },
});

// What the rule reads of an interval's connections (details.connections: the sampler's new object
// each sample, with a list of hosts): copied into the figures of an interval that left the window
// rather than the details kept for 60 s. Details whose hosts are not a list are kept as they are
// (the rule's gate and sums read them as before).
function keptConnections(sample, kept) {
  const c = sample.details.connections || null;
  if (!c || !Array.isArray(c.hosts)) return c;
  const out = kept instanceof KeptConnections ? kept : new KeptConnections();
  out.connections = c.connections;
  out.connectSeconds = c.connectSeconds;
  let hosts = out.hosts;
  if (hosts.length !== c.hosts.length) {
    // A list of the hosts' length (push would give it room for 17: ~130 bytes more per summary,
    // 600 summaries at a 100 ms interval), the kept figures reused.
    const list = new Array(c.hosts.length);
    for (let i = 0; i < list.length && i < hosts.length; i++) list[i] = hosts[i];
    out.hosts = hosts = list;
  }
  for (let i = 0; i < c.hosts.length; i++) {
    const h = c.hosts[i];
    let k = hosts[i];
    if (k === undefined) hosts[i] = k = { host: h.host, requests: h.requests, newConnections: h.newConnections };
    k.host = h.host;
    k.requests = h.requests;
    k.newConnections = h.newConnections;
  }
  return out;
}

class KeptConnections {
  connections = 0;
  connectSeconds = 0;
  /** @type {{ host: string, requests: number, newConnections: number }[]} */
  hosts = [];
}

// New connections to all hosts over the window; Infinity (no gate) where a figure is not a
// non-negative number, so that such input takes the full evaluation.
function newConnections(window) {
  let sum = 0;
  for (let w = 0; w < window.length; w++) {
    const c = window[w].own['http-no-keepalive'];
    if (!c) continue;
    if (!Array.isArray(c.hosts)) return Infinity;
    for (let i = 0; i < c.hosts.length; i++) {
      const v = c.hosts[i].newConnections;
      if (!(typeof v === 'number' && v >= 0)) return Infinity;
      sum += v;
    }
  }
  return sum;
}
