'use strict';

// The agent's own network I/O (an OTLP exporter's requests) must stay out of the figures it
// reports about the app. Agents made here are marked, connect with the unwrapped dns.lookup, and
// flag the synchronous part of creating a connection, during which net publishes
// net.client.socket. (AsyncLocalStorage would follow the async parts too, but on Node 20/22 it
// turns on promise hooks for the whole process.)

const dnsModule = require('dns');

const OWN = Symbol.for('uvscope.ownIo');
let creating = 0;

/**
 * What the agent's own I/O needs, handed to samplers and exporters (nobody searches the sampler
 * list for it).
 * @typedef {object} OwnIo
 * @property {Function} lookup dns.lookup-compatible: the dns.lookup uvscope's DNS sampler found
 *   when it wrapped (so the agent's own lookups are not counted as the app's), dns.lookup
 *   otherwise. Resolved at each call, so it may be handed out before the sampler wraps.
 * @property {Function} lookupService dns.lookupService-compatible: the DNS sampler's, which the
 *   DNS-slot model sees (dns.lookupService otherwise). Resolved at each call.
 * @property {(original: Function, lookupService?: Function) => void} captureLookup called once
 *   with dns.lookup as it was before the wrapper (and the DNS sampler's own lookupService)
 * @property {(protocol: string, options?: object) => import('http').Agent} createAgent an http(s)
 *   Agent for uvscope's own requests (see createOwnAgent), connecting with `lookup`
 */

/**
 * The agent's own I/O: its unwrapped lookup and its own http(s) agents.
 * @param {{ dns?: { lookup: Function, lookupService: Function } }} [options] the dns module (injectable for tests)
 * @returns {OwnIo}
 */
function createOwnIo({ dns = dnsModule } = {}) {
  let unwrapped = null;
  let tracked = null;
  const lookup = function ownLookup(...args) {
    return Reflect.apply(unwrapped || dns.lookup, dns, args);
  };
  return {
    lookup,
    lookupService(...args) {
      return Reflect.apply(tracked || dns.lookupService, dns, args);
    },
    captureLookup(original, lookupService) {
      if (typeof original === 'function') unwrapped = original;
      if (typeof lookupService === 'function') tracked = lookupService;
    },
    createAgent(protocol, options) {
      return createOwnAgent(protocol, lookup, options);
    },
  };
}

/**
 * An http(s) Agent for uvscope's own requests.
 * @param {string} protocol 'http:' or 'https:'
 * @param {Function} [lookup] dns.lookup as it was before uvscope wrapped it
 * @param {import('http').AgentOptions & { unrefSockets?: boolean }} [options] more http.Agent
 *   options, and unrefSockets: unref every socket, also when the agent reuses one (its
 *   reuseSocket() refs it again), so requests in flight never hold the process
 */
function createOwnAgent(protocol, lookup, options = {}) {
  const mod = protocol === 'https:' ? require('https') : require('http');
  const { unrefSockets, ...agentOptions } = options;
  const agent = new mod.Agent({ keepAlive: true, ...agentOptions, ...(lookup ? { lookup: /** @type {import('net').LookupFunction} */ (lookup) } : {}) });
  const createConnection = agent.createConnection;
  agent.createConnection = function (...args) {
    creating++;
    try {
      const socket = /** @type {import('net').Socket} */ (Reflect.apply(createConnection, this, args));
      if (unrefSockets && socket && typeof socket.unref === 'function') socket.unref();
      return socket;
    } finally {
      creating--;
    }
  };
  if (unrefSockets) {
    const reuseSocket = agent.reuseSocket;
    agent.reuseSocket = function (/** @type {import('net').Socket} */ socket, request) {
      Reflect.apply(reuseSocket, this, [socket, request]);
      socket.unref();
    };
  }
  agent[OWN] = true;
  return agent;
}

/** Whether a connection is being created by one of uvscope's own agents right now. */
function creatingOwnConnection() {
  return creating > 0;
}

/**
 * Whether an outgoing request is uvscope's own.
 * @param {{ agent?: object }} request an http.ClientRequest
 */
function isOwnRequest(request) {
  return Boolean(request && request.agent && request.agent[OWN]);
}

// The servers uvscope listens with (its endpoint): not the app's listening sockets.
const ownServers = new WeakSet();

/**
 * Mark a server as uvscope's own (the listen source leaves it out).
 * @param {object} server a net.Server
 */
function markOwnServer(server) {
  ownServers.add(server);
}

/**
 * Whether a server is uvscope's own.
 * @param {object} server a net.Server
 */
function isOwnServer(server) {
  return ownServers.has(server);
}

module.exports = { createOwnIo, createOwnAgent, creatingOwnConnection, isOwnRequest, markOwnServer, isOwnServer };
