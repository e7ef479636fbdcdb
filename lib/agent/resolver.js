'use strict';

// The resolver's configuration (resolv.conf, /etc/hosts) as the agent keeps it: read in the
// second phase, then again at most once a minute, when a sample is taken.

const { reportError } = require('../core/errors');

// resolv.conf and /etc/hosts are re-read this often (tiny files, read synchronously).
const RESOLVER_REFRESH_MS = 60000;

/** The last resolver configuration read, refreshed by the sampling timer. */
class ResolverConfig {
  /** @type {any} lib/sources/dns/resolver.js readResolverConfig() */
  #config = null;
  #readAt = 0;

  /** @returns {any} the configuration last read, or null before the first read (or if it failed) */
  get current() {
    return this.#config;
  }

  /**
   * Read the files again if the last read is older than a minute (or none succeeded yet).
   * @param {number} now Date.now()
   */
  refresh(now) {
    if (this.#config && now - this.#readAt < RESOLVER_REFRESH_MS) return;
    this.#readAt = now;
    try {
      this.#config = require('../sources/dns/resolver').readResolverConfig();
    } catch (err) {
      reportError('resolver', err);
    }
  }

  /** @returns {import('../snapshot/snapshot').ResolverDetails | null} the snapshot's details.resolver */
  details() {
    if (!this.#config) return null;
    const { hosts, ...conf } = this.#config;
    return { ...conf, hostsNames: [...hosts].slice(0, 1000) };
  }
}

module.exports = { ResolverConfig };
