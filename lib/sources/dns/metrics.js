'use strict';

// What the DNS source produces: its metrics and the bucket bounds of its histograms, read by the
// catalog (lib/snapshot/catalog.js) and by the sampler that fills them. The wait for a DNS slot is
// a threadpool queue wait: it shares the threadpool's bounds.

const { metricDef } = require('../metric-def');
const { QUEUE_WAIT_BUCKETS } = require('../threadpool/metrics');

/** Upper bounds for DNS lookup durations. (4, 6] and (9, 11] hold lookups that waited one or two
 * resolv.conf timeouts of 5 s (glibc's default), so resolver timeouts stand apart from slow answers. */
const DNS_BUCKETS = Object.freeze([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 4, 6, 9, 11, 20, 30]);

/** @type {readonly import('../metric-def').MetricDef[]} */
const METRICS = Object.freeze([
  metricDef('dns.lookup.duration', 'histogram', 's', ['dns.question.name', 'error.type'],
    'Duration of each dns.lookup (getaddrinfo) made by the app, by hostname (bounded; the rest under _other) and error code (empty on success).',
    DNS_BUCKETS, {
      perEvent: { channel: 'dnsLookupEnd', value: 'seconds', attributes: { 'dns.question.name': 'name', 'error.type': 'errorType' } },
    }),
  metricDef('nodejs.dns.lookup.queue_wait', 'histogram', 's', ['dns.question.name'],
    'The part of each dns.lookup spent waiting for one of the threadpool\'s DNS slots ((size+1)/2 threads run getaddrinfo), by hostname (the same bounded names as dns.lookup.duration); the rest of the lookup is resolving. Estimated from every lookup\'s start and end (see README).',
    QUEUE_WAIT_BUCKETS, {
      perEvent: { channel: 'dnsLookupEnd', value: 'queueWaitSeconds', attributes: { 'dns.question.name': 'name' } },
    }),
]);

module.exports = { METRICS, DNS_BUCKETS };
