'use strict';

// The resolver's configuration (resolv.conf, /etc/hosts) as the agent keeps it: read in the
// second phase, then again at most once a minute, when a sample is taken.

const { reportError } = require('../core/errors');

// resolv.conf and /etc/hosts are re-read this often (tiny files, read synchronously).
const RESOLVER_REFRESH_MS = 60000;

/**
 * Reads the resolver's files (lib/sources/dns/resolver.js readResolverConfig()) and keeps the last
 * configuration read, refreshed by the sampling timer.
 */
class ResolverReader {
  /** @type {import('../sources/dns/resolver').ResolverConfig | null} */
  #config = null;
  #readAt = 0;
  /** @type {{ config: any, details: any } | null} details() of the config last read (a new read, new details) */
  #details = null;

  /** @returns {import('../sources/dns/resolver').ResolverConfig | null} the configuration last read, or null before the first read (or if it failed) */
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
    const config = this.#config;
    if (!config) return null;
    // The same object for every sample until the files are read again (frozen with the first
    // snapshot that holds it): not two copies of /etc/hosts' names every sample.
    if (this.#details === null || this.#details.config !== config) {
      const { hosts, ...conf } = config;
      this.#details = { config, details: { ...conf, hostsNames: [...hosts].slice(0, 1000) } };
    }
    return this.#details.details;
  }
}

module.exports = { ResolverReader };
