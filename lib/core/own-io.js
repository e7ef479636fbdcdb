'use strict';

// The agent's own network I/O (an OTLP exporter's requests) must stay out of the figures it
// reports about the app. Agents made here are marked, connect with the unwrapped dns.lookup, and
// flag the synchronous part of creating a connection, during which net publishes
// net.client.socket. (AsyncLocalStorage would follow the async parts too, but on Node 20/22 it
// turns on promise hooks for the whole process.)
//
// It must stay out of the app's traces too: withoutTracing() runs the start of each piece of own
// I/O (a listen, a lookup, a request, a socket's creation) in the app's tracers' "do not trace"
// context, which their context managers carry into its callbacks. It runs only around uvscope's own
// I/O: the app's lookups never pass here.

const dnsModule = require('dns');

const OWN = Symbol.for('uvscope.ownIo');
let creating = 0;

// @opentelemetry/api 1.x keeps its globals (the context manager the app registered among them)
// under this symbol on globalThis, shared by every copy of the API (exporters/otlp/global.js);
// @opentelemetry/core's suppressTracing(context) is context.setValue(key, true) with this key
// (createContextKey is Symbol.for), and the SDK's tracers, like every instrumentation, make no
// span in a context where it is true. Read here, nothing of OpenTelemetry is loaded or required.
const OTEL_API = Symbol.for('opentelemetry.js.api.1');
const OTEL_SUPPRESS = Symbol.for('OpenTelemetry SDK Context Key SUPPRESS_TRACING');
// dd-trace's plugins make no span while its 'legacy' store is { noop: true } (dd-trace-js
// packages/dd-trace/src/plugins/plugin.js, Subscription and StoreBinding), which is how dd-trace
// keeps its own requests out of traces (exporters/common/request.js, dogstatsd.js). The storage
// is not exported: it is found once in require.cache, from dd-trace's datadog-core module, when
// dd-trace is loaded (global._ddtrace, set by its bootstrap).
const DD_CORE = `${require('path').sep}packages${require('path').sep}datadog-core${require('path').sep}index.js`;
const DD_NOOP = Object.freeze({ noop: true });
/** @type {{ run: Function } | null | undefined} undefined: not looked for since dd-trace loaded */
let ddStorage;

/**
 * What the agent's own I/O needs, handed to samplers and exporters (nobody searches the sampler
 * list for it).
 * @typedef {object} OwnIo
 * @property {Function} lookup dns.lookup-compatible: the dns.lookup uvscope's DNS sampler found
 *   when it wrapped (so the agent's own lookups are not counted as the app's), dns.lookup
 *   otherwise, called without tracing (withoutTracing). Resolved at each call, so it may be handed
 *   out before the sampler wraps.
 * @property {Function} lookupService dns.lookupService-compatible: the DNS sampler's, which the
 *   DNS-slot model sees (dns.lookupService otherwise), called without tracing. Resolved at each call.
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
    return withoutTracing(() => Reflect.apply(unwrapped || dns.lookup, dns, args));
  };
  return {
    lookup,
    lookupService(...args) {
      return withoutTracing(() => Reflect.apply(tracked || dns.lookupService, dns, args));
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

/**
 * Runs fn (the start of some of uvscope's own I/O) with tracing suppressed for the tracers the
 * app set up: OpenTelemetry (suppressTracing in the active context, through the app's context
 * manager; with none registered the API has no context to carry it and fn runs as is) and
 * dd-trace (its noop store). What fn starts keeps that context in its callbacks, so the lookups,
 * connections and requests it leads to make no span, and a server it listens with serves its
 * requests in it. fn's result and exceptions are its own.
 * @template T
 * @param {() => T} fn
 * @returns {T}
 */
function withoutTracing(fn) {
  let run = fn;
  let manager;
  let context;
  try {
    const dd = ddTraceStorage();
    if (dd) run = () => dd.run(DD_NOOP, fn);
    const api = globalThis[OTEL_API];
    manager = api && api.context;
    const active = manager && typeof manager.with === 'function' ? manager.active() : null;
    context = active && typeof active.setValue === 'function' ? active.setValue(OTEL_SUPPRESS, true) : null;
  } catch {
    // a tracer's internals not as expected: fn runs as is, traced
    return fn();
  }
  return context ? manager.with(context, run) : run();
}

// dd-trace's legacy storage, once dd-trace is loaded (see DD_CORE).
function ddTraceStorage() {
  if (ddStorage !== undefined) return ddStorage;
  if (!globalThis._ddtrace) return null;
  ddStorage = null;
  const cache = require.cache;
  for (const file of Object.keys(cache)) {
    if (!file.endsWith(DD_CORE)) continue;
    const core = cache[file].exports;
    const storage = core && typeof core.storage === 'function' ? core.storage('legacy') : null;
    if (storage && typeof storage.run === 'function') {
      ddStorage = storage;
      break;
    }
  }
  return ddStorage;
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

module.exports = { createOwnIo, createOwnAgent, creatingOwnConnection, isOwnRequest, withoutTracing, markOwnServer, isOwnServer };
