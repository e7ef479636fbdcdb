'use strict';

// The DNS source: every dns.lookup the app makes, by hostname, split into the wait for a DNS slot
// and the resolving, with the resolv.conf in force. This file declares it (its settings and
// metrics) and creates it; sampler.js does the work, resolver.js reads resolv.conf as glibc does.

const { setting } = require('../../core/setting');
const { parseInteger } = require('../../settings/parsers');
const { METRICS } = require('./metrics');
const resolver = require('./resolver');

const SETTINGS = Object.freeze([
  setting('dns.maxNames', 'UVSCOPE_DNS_MAX_NAMES', parseInteger(1, 100000), 'an integer from 1 to 100000', { default: 100, doc: 'distinct hostnames kept as labels; later ones count as _other (each kept name costs about 10 KB)' }),
  ...resolver.SETTINGS,
]);

/** @type {import('../index').Source} */
const source = Object.freeze({
  name: 'dns',
  // It wraps dns.lookup before the app's first line.
  early: true,
  settings: SETTINGS,
  metrics: METRICS,
  create(ctx) {
    const sampler = require('./sampler').createDnsSampler({ maxNames: ctx.options.dns.maxNames, resolver: ctx.resolver });
    ctx.ownIo.captureLookup(sampler.ownLookup, sampler.ownLookupService);
    return sampler;
  },
});

module.exports = { source };
