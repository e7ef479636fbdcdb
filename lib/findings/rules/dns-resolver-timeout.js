'use strict';

const { defineRule } = require('../rule');
const { windowSeconds, aggregate } = require('../window');

/**
 * dns-resolver-timeout: lookups that ended just after a multiple of the resolv.conf timeout (the
 * DNS sampler counts them per hostname): a query got no answer and was sent again.
 */
module.exports = defineRule({
  id: 'dns-resolver-timeout',
  limits: {},
  docs: {
    means: 'a DNS query got no answer and was sent again after the resolv.conf `timeout`',
    fires: () => 'lookups that ended just after k x the resolv.conf `timeout` (a query was lost and resent); not while other work held the pool (threadpool-saturated) or the app\'s threads waited for a CPU (cpu-starved) in the window, when such a lookup may have spent that time waiting',
    impact: 'one `timeout` lost per such lookup, per second of the window',
    advice: 'cites `timeout`, `attempts` and the nameservers; lower timeout, `single-request-reopen`, a local caching resolver',
    example: 'the lab\'s `ko` incident (the first query of a name is lost): "1 lookup(s) took about a multiple of the resolv.conf timeout (5 s): a DNS query got no answer and was sent again."',
  },
  // Nothing to fire on: no lookup timed out (in the summary's hostnames, its bucket's once merged).
  quiet: (s) => !anyTimeouts([s]),
  evaluate(window, lim, { resolver }) {
    // A lookup that took about k x timeout while other work held the pool or the app's threads
    // waited for a CPU may have spent that time waiting, not resending: no resolver claim then
    // (threadpool-saturated and cpu-starved name the cause).
    // The gate, every sample: any timed-out lookup in the window, in a loop that allocates nothing.
    if (!anyTimeouts(window)) return null;
    if (window.some((s) => s.poolHeld || s.cpuStarved)) return null;
    const hosts = aggregate(window, (h) => h.timeouts);
    const total = hosts.reduce((a, h) => a + h.value, 0);
    if (total === 0) return null;
    const timeout = resolver ? resolver.timeout : 5;
    const attempts = resolver ? resolver.attempts : 2;
    const lost = total * timeout;
    const seconds = windowSeconds(window);
    return {
      summary: `${total} lookup(s) took about a multiple of the resolv.conf timeout (${timeout} s): a DNS query got no answer and was sent again.`,
      evidence: {
        lookups: total,
        hostnames: hosts.slice(0, 10).map((h) => ({ name: h.name, lookups: h.value })),
        resolvConf: resolver ? { nameservers: resolver.nameservers, timeout, attempts, options: resolver.options } : null,
      },
      advice: [
        `Find why queries go unanswered (packet loss, an overloaded or unreachable nameserver, conntrack races on parallel A/AAAA queries). With timeout:${timeout} attempts:${attempts}, one lost packet costs ${timeout} s and a dead nameserver up to ${timeout * attempts} s per lookup.`,
        'A lower timeout (options timeout:1 attempts:2 in resolv.conf, dnsConfig in Kubernetes) bounds the cost; options single-request-reopen avoids the A/AAAA conntrack race.',
        'A local caching resolver (NodeLocal DNSCache, dnsmasq, systemd-resolved) and an in-process cache remove most queries.',
      ],
      impact: { secondsPerSecond: lost / seconds, requests: total, score: lost / seconds },
    };
  },
});

// Whether a hostname had a lookup time out in the window (aggregate counts the truthy ones).
function anyTimeouts(window) {
  for (let w = 0; w < window.length; w++) {
    const hosts = window[w].hosts;
    for (let i = 0; i < hosts.length; i++) if (hosts[i].timeouts) return true;
  }
  return false;
}
