'use strict';

const { defineRule } = require('../rule');
const { aggregate } = require('../window');
const { anyLookups } = require('../hosts');
const { searchExpanded } = require('../../sources/dns/resolver');

/**
 * dns-search-expansion: hostnames that glibc first tries with each search domain (fewer dots
 * than ndots, no trailing dot, not in /etc/hosts), so each lookup sends several queries.
 */
module.exports = defineRule({
  id: 'dns-search-expansion',
  limits: {},
  docs: {
    means: 'a hostname is first tried with every search domain of resolv.conf: several queries per lookup',
    fires: () => 'names with fewer dots than `ndots`, no trailing dot, a search list, not in /etc/hosts',
    impact: 'none measured: the extra queries happen inside getaddrinfo, out of sight, so it is info; `requests`: the lookups of those names',
    advice: 'trailing dot, lower `ndots`',
    example: 'a Kubernetes pod (ndots:5, three search domains) calling api.example.com: "1 hostname(s) have fewer than ndots:5 dots, so every lookup first tries the 3 search domain(s): up to 4 queries (x2 for A and AAAA) per lookup."',
  },
  // Nothing to fire on: no lookups (in the summary's hostnames, its bucket's once merged).
  quiet: (s) => !anyLookups(s.hosts),
  evaluate(window, lim, { resolver }) {
    if (!resolver || resolver.search.length === 0) return null;
    const conf = { ...resolver, hosts: new Set(resolver.hostsNames || []) };
    const names = aggregate(window, (h) => h.lookups).filter((h) => h.name !== '_other' && searchExpanded(h.name, conf));
    if (names.length === 0) return null;
    const hostnames = names.slice(0, 10).map((h) => ({ name: h.name, lookups: h.value }));
    return {
      summary: `${names.length} hostname(s) have fewer than ndots:${resolver.ndots} dots, so every lookup first tries the ${resolver.search.length} search domain(s): up to ${resolver.search.length + 1} queries (x2 for A and AAAA) per lookup.`,
      evidence: { ndots: resolver.ndots, search: resolver.search, hostnames },
      advice: [
        'Use fully qualified names with a trailing dot (api.example.com.) for external hosts.',
        'Or lower ndots (options ndots:1; in Kubernetes, dnsConfig.options ndots) where the search list is not needed.',
      ],
      // The extra queries happen inside getaddrinfo, out of sight: what they cost is not measured.
      impact: { requests: hostnames.reduce((a, h) => a + h.lookups, 0), score: 0 },
    };
  },
});
