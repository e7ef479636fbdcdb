'use strict';

const dnsModule = require('dns');
const diagnosticsChannel = require('diagnostics_channel');
const { isIP } = require('net');
const { syncBuiltinESMExports } = require('module');
const { Histogram } = require('../histogram');
const { DNS_BUCKETS } = require('../metrics');
const { reportError } = require('../report');

const OTHER = '_other';

// Per-lookup events for exporters that record each lookup (DogStatsD distributions, OpenTelemetry
// histograms) and for tracer integrations. Published only when someone subscribes.
//  start: { hostname, inFlight }  app lookups already in flight when this one started
//  end:   { hostname, name, errorType, seconds }  name is the bounded label (or _other)
const startChannel = diagnosticsChannel.channel('uvscope:dns.lookup:start');
const endChannel = diagnosticsChannel.channel('uvscope:dns.lookup:end');

/**
 * Every dns.lookup the app makes, timed from call to callback, by hostname and error code.
 *
 * net, http, https, fetch (undici) and dgram all read dns.lookup from the dns module at call
 * time, so wrapping dns.lookup and dns.promises.lookup covers them; syncBuiltinESMExports() makes
 * `import { lookup } from 'node:dns'` see the wrapper too. Calls that never reach getaddrinfo (an
 * IP literal, an empty name) are not lookups and are not counted.
 *
 * @param {object} [options]
 * @param {object} [options.dns] the dns module (injectable for tests)
 * @param {number} [options.maxNames] distinct hostnames kept as labels; the rest count as _other
 */
function createDnsSampler(options = {}) {
  const dns = options.dns || dnsModule;
  const maxNames = options.maxNames || 100;
  const series = new Map(); // `${name}\0${errorType}` -> { name, errorType, histogram }
  const names = new Set();
  let inFlight = 0;
  let active = true;

  function record(hostname, err, start) {
    try {
      inFlight--;
      if (!active) return;
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      let name = hostname.toLowerCase();
      if (!names.has(name)) {
        if (names.size < maxNames) names.add(name);
        else name = OTHER;
      }
      const errorType = err ? String(err.code || err.name || 'Error') : '';
      const key = `${name}\u0000${errorType}`;
      let s = series.get(key);
      if (!s) {
        s = { name, errorType, histogram: new Histogram(DNS_BUCKETS) };
        series.set(key, s);
      }
      s.histogram.observe(seconds);
      if (endChannel.hasSubscribers) endChannel.publish({ hostname, name, errorType, seconds });
    } catch (e) {
      reportError('sampler:dns', e);
    }
  }

  const originalLookup = dns.lookup;
  function started(hostname) {
    if (startChannel.hasSubscribers && active) {
      try {
        startChannel.publish({ hostname, inFlight });
      } catch (e) {
        reportError('sampler:dns', e);
      }
    }
    inFlight++;
  }
  const tracker = { record, started, abandoned: () => inFlight-- };
  const wrappedLookup = wrapCallbackLookup(originalLookup, tracker);
  dns.lookup = wrappedLookup;

  const promises = dns.promises;
  const originalPromisesLookup = promises && promises.lookup;
  const wrappedPromisesLookup = originalPromisesLookup && wrapPromiseLookup(originalPromisesLookup, tracker);
  if (wrappedPromisesLookup) promises.lookup = wrappedPromisesLookup;
  syncBuiltinESMExports();

  return {
    name: 'dns',
    /** dns.lookup as it was before the wrapper: for the agent's own probes. */
    originalLookup,
    /** App lookups started and not yet called back. */
    get inFlight() {
      return inFlight;
    },
    sample() {
      const out = [];
      for (const s of series.values()) {
        out.push({
          name: 'dns.lookup.duration',
          attributes: { 'dns.question.name': s.name, 'error.type': s.errorType },
          histogram: s.histogram.snapshot(),
        });
      }
      return out;
    },
    close() {
      active = false;
      // Put the originals back unless someone wrapped over us; then our wrapper stays in their
      // chain and just passes calls through.
      if (dns.lookup === wrappedLookup) dns.lookup = originalLookup;
      if (wrappedPromisesLookup && promises.lookup === wrappedPromisesLookup) promises.lookup = originalPromisesLookup;
      syncBuiltinESMExports();
    },
  };
}

function isLookupOf(hostname) {
  return typeof hostname === 'string' && hostname !== '' && isIP(hostname) === 0;
}

// Invalid arguments make Node throw synchronously: that is no lookup, so it is not counted.
function wrapCallbackLookup(original, { record, started, abandoned }) {
  const lookup = function lookup(hostname, options, callback) {
    const cb = typeof options === 'function' ? options : callback;
    if (typeof cb !== 'function' || !isLookupOf(hostname)) return Reflect.apply(original, this, arguments);
    const start = process.hrtime.bigint();
    const done = function (err) {
      record(hostname, err, start);
      return Reflect.apply(cb, this, arguments);
    };
    let result;
    started(hostname);
    try {
      result = typeof options === 'function'
        ? Reflect.apply(original, this, [hostname, done])
        : Reflect.apply(original, this, [hostname, options, done]);
    } catch (err) {
      abandoned();
      throw err;
    }
    return result;
  };
  // dns.lookup carries Node's internal customPromisifyArgs symbol, which makes
  // util.promisify(dns.lookup) resolve { address, family }; copy it so that still holds.
  for (const sym of Object.getOwnPropertySymbols(original)) {
    Object.defineProperty(lookup, sym, Object.getOwnPropertyDescriptor(original, sym));
  }
  return lookup;
}

function wrapPromiseLookup(original, { record, started, abandoned }) {
  return function lookup(hostname) {
    if (!isLookupOf(hostname)) return Reflect.apply(original, this, arguments);
    const start = process.hrtime.bigint();
    started(hostname);
    let promise;
    try {
      promise = Reflect.apply(original, this, arguments);
    } catch (err) {
      abandoned();
      throw err;
    }
    // The side branch handles the rejection itself; the caller's promise is returned untouched.
    promise.then(() => record(hostname, null, start), (err) => record(hostname, err, start));
    return promise;
  };
}

module.exports = { createDnsSampler, OTHER, startChannel, endChannel };
