'use strict';

const { isIP } = require('net');
const { reportError } = require('../../lib/core/errors');

/**
 * The Datadog Agent's address, resolved the way the klarna write-up asks for: never a lookup per
 * datagram. A hostname is resolved once, then refreshed at a fixed interval by whoever calls
 * refresh() (the exporter, from snapshot times: no timer of its own). At most one lookup is in
 * flight; when one fails the last good address is kept. An IP address is never looked up.
 *
 * @param {object} options
 * @param {string} options.host hostname or IP address
 * @param {number} options.refreshMs minimum time between two lookups
 * @param {Function} options.lookup dns.lookup-compatible (the agent passes the unwrapped one, so
 *   these lookups are not counted as the app's)
 * @param {(address: {address: string, family: number}) => void} options.onChange called when the
 *   address is first known and whenever a refresh returns a different one
 * @param {(err: Error) => void} [options.onError]
 * @returns {{ refresh(now: number): void, readonly current: {address: string, family: number}|null, readonly lookups: number, close(): void }}
 */
function createAgentAddress({ host, refreshMs, lookup, onChange, onError = () => {} }) {
  const family = isIP(host);
  let current = family ? { address: host, family } : null;
  let inFlight = false;
  let lastAttempt = -Infinity;
  let lastNow = -Infinity;
  let lookups = 0;
  let closed = false;
  if (current) changed(current);

  // onChange builds a new client; it runs in a lookup callback, where a throw would reach the app.
  function changed(address) {
    try {
      onChange(address);
    } catch (err) {
      reportError('exporter:datadog', err);
    }
  }

  function refresh(now) {
    lastNow = now;
    if (family || closed || inFlight || now - lastAttempt < refreshMs) return;
    inFlight = true;
    lastAttempt = now;
    lookups++;
    // The Agent listens on 127.0.0.1 by default; prefer IPv4 when a name has both (localhost).
    try {
      lookup(host, { family: 0, order: 'ipv4first' }, (err, address, fam) => {
        inFlight = false;
        lastAttempt = lastNow; // the interval runs from when a slow lookup ended

        if (closed) return;
        if (err || !isIP(address)) {
          try {
            onError(err || new Error(`lookup of ${host} returned ${address}`));
          } catch (e) {
            reportError('exporter:datadog', e);
          }
          return;
        }
        if (current && current.address === address) return;
        current = { address, family: fam === 6 ? 6 : 4 };
        changed(current);
      });
    } catch (err) {
      inFlight = false;
      try {
        onError(err);
      } catch (e) {
        reportError('exporter:datadog', e);
      }
    }
  }

  return {
    refresh,
    get current() {
      return current;
    },
    get lookups() {
      return lookups;
    },
    close() {
      closed = true;
    },
  };
}

module.exports = { createAgentAddress };
