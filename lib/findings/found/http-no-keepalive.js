'use strict';

// What http-no-keepalive (lib/findings/rules/http-no-keepalive.js) says once its gate passed
// (enough new connections in the window): the hosts, the summary, evidence, advice and impact.
// Loaded then, not with the rule: an app that reuses its connections never needs it.

const { windowSeconds } = require('../window');
const { round } = require('../../core/format');

/**
 * The finding over the window, its gate passed.
 * @param {object[]} window the window of interval summaries
 * @param {Readonly<Record<string, number>>} lim the limits
 * @returns {import('../rule').RuleResult | null}
 */
function found(window, lim) {
  const byHost = new Map();
  let lookups = 0;
  let connections = 0;
  let connectSeconds = 0;
  for (const s of window) {
    for (let i = 0; i < s.hosts.length; i++) lookups += s.hosts[i].lookups;
    const c = s.own['http-no-keepalive'];
    if (!c) continue;
    connections += c.connections;
    connectSeconds += c.connectSeconds || 0;
    for (const h of c.hosts) {
      const t = byHost.get(h.host) || { host: h.host, requests: 0, newConnections: 0 };
      t.requests += h.requests;
      t.newConnections += h.newConnections;
      byHost.set(h.host, t);
    }
  }
  const hot = [...byHost.values()]
    .filter((h) => h.requests >= lim.keepAliveMinRequests && h.newConnections / h.requests >= lim.newConnectionShare)
    .sort((a, b) => b.requests - a.requests);
  if (hot.length === 0) return null;
  const worst = hot[0];
  const fresh = hot.reduce((a, h) => a + h.newConnections, 0);
  // What those connections cost to open (lookup and handshake), at the mean connect time.
  const cost = connections > 0 ? (connectSeconds / connections) * fresh : 0;
  const seconds = windowSeconds(window);
  return {
    summary: `${worst.newConnections} of ${worst.requests} requests to ${worst.host} opened a new connection: keep-alive is off, so each request pays for a DNS lookup and a TCP (and TLS) handshake.`,
    evidence: {
      hosts: hot.slice(0, 10),
      lookupsPerNewConnection: connections > 0 ? round(lookups / connections) : null,
      meanConnectSeconds: connections > 0 ? connectSeconds / connections : null,
    },
    advice: [
      'Use an agent with keepAlive: true (new http.Agent({ keepAlive: true })), do not send Connection: close, and let the server keep connections open (keepAliveTimeout).',
      'For fetch/undici, reuse one dispatcher (the global one or an Agent/Pool) rather than a new one per request.',
    ],
    impact: { secondsPerSecond: cost / seconds, requests: fresh, score: cost / seconds },
  };
}

module.exports = { found };
