'use strict';

// The mocha side of support/dns-server.js: one call sets up a suite's DNS server.

const { createDnsServer, normalizeName } = require('../../support/dns-server');
const { requireNamespace } = require('./namespace');

/**
 * Mocha hooks for a suite that runs against a DNS server of its own on address:53: before() skips
 * the suite where there is no private mount namespace (fails it in CI), starts the server and
 * answers `names`; beforeEach() clears its query log; after() closes it. Call it inside describe(); hooks registered before it run
 * first (one that skips stops this one from starting the server).
 *
 * The value returned stands for the server once before() has run: `server.queries`,
 * `server.setName(...)`, `server.reset()`.
 * @param {{ address: string, port?: number, names?: Record<string, object> }} options
 *   address: a loopback address no other suite uses at the same time; names: setName() calls
 * @returns {import('../../support/dns-server').DnsServer}
 */
function withDnsServer({ address, port = 53, names = {} }) {
  let server = null;
  before(async function () {
    requireNamespace(this);
    server = await createDnsServer({ address, port });
    for (const [name, answer] of Object.entries(names)) server.setName(name, answer);
  });
  // Each test starts with an empty query log and fresh dropFirst counters: a test would otherwise
  // read an earlier test's queries as its own.
  beforeEach(() => {
    if (server) server.reset();
  });
  after(async () => {
    const s = server;
    server = null;
    if (s) await s.close();
  });
  return new Proxy({}, {
    get(_, key) {
      if (!server) throw new Error(`the DNS server on ${address} is not running (used outside its suite's tests?)`);
      const value = server[key];
      return typeof value === 'function' ? value.bind(server) : value;
    },
  });
}

module.exports = { withDnsServer, createDnsServer, normalizeName };
