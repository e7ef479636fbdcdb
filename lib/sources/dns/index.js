'use strict';

// The DNS source: every dns.lookup the app makes, by hostname, split into the wait for a DNS slot
// and the resolving, with the resolv.conf in force. This file declares it (its settings and
// metrics) and creates it; sampler.js does the work, resolver.js reads resolv.conf as glibc does.

const { setting } = require('../../core/setting');
const { parseInteger, parseString } = require('../../settings/parsers');

// glibc's variables, read as glibc reads them (never invalid) when resolver.js reads the resolver
// configuration (the app may set them in its own code). Declared here, not in resolver.js: the
// preload reads every settings row, and resolver.js waits for the agent's second phase.
const LOCALDOMAIN = setting('resolver.localDomain', 'LOCALDOMAIN', parseString, 'a search list', { late: true, default: undefined, doc: 'glibc\'s override of the resolv.conf search list' });
const RES_OPTIONS = setting('resolver.options', 'RES_OPTIONS', parseString, 'resolver options', { late: true, default: undefined, doc: 'glibc\'s resolver options, on top of resolv.conf' });

const SETTINGS = Object.freeze([
  setting('dns.maxNames', 'UVSCOPE_DNS_MAX_NAMES', parseInteger(1, 100000), 'an integer from 1 to 100000', { default: 100, doc: 'distinct hostnames kept as labels; later ones count as _other (each kept name costs about 10 KB)' }),
  LOCALDOMAIN,
  RES_OPTIONS,
]);

/** @type {import('../index').Source} */
const source = Object.freeze({
  name: 'dns',
  // It wraps dns.lookup before the app's first line.
  early: true,
  settings: SETTINGS,
  // Read by the catalog, at the agent's second phase: metrics.js is not loaded in the preload.
  get metrics() {
    return require('./metrics').METRICS;
  },
  create(ctx) {
    const sampler = require('./sampler').createDnsSampler({ maxNames: ctx.options.dns.maxNames, resolver: ctx.resolver });
    ctx.ownIo.captureLookup(sampler.ownLookup, sampler.ownLookupService);
    return sampler;
  },
});

module.exports = { source, LOCALDOMAIN, RES_OPTIONS };
