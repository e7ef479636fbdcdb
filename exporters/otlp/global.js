'use strict';

// @opentelemetry/api 1.x keeps its globals in one object on globalThis under this symbol, shared
// by every copy of the API in the process (src/internal/global-utils.ts); the SDK's
// metrics.setGlobalMeterProvider() puts the provider in its `metrics` slot. Reading the slot
// directly, rather than through a copy of the API that uvscope would resolve, costs no module load,
// works when the API is not resolvable from where uvscope is installed, and is not hidden by an
// older API copy (the API's version check returns the no-op provider to a copy older than the one
// that registered). The API has no proxy meter provider (only a ProxyTracerProvider for traces),
// so an instrument created on the no-op provider before the SDK registers would never report:
// uvscope therefore looks here again after every sample and creates its instruments once a
// provider is there.
const API_GLOBAL = Symbol.for('opentelemetry.js.api.1');

/**
 * The MeterProvider the app registered with @opentelemetry/api 1.x, if any.
 * @returns {object|undefined} an object with getMeter(), or undefined
 */
function globalMeterProvider() {
  const api = globalThis[API_GLOBAL];
  const provider = api && api.metrics;
  return provider && typeof provider.getMeter === 'function' ? provider : undefined;
}

/**
 * The TracerProvider the app registered with @opentelemetry/api 1.x (trace.setGlobalTracerProvider
 * puts a ProxyTracerProvider in the `trace` slot, delegating to the SDK's provider), if any.
 * @returns {object|undefined} the provider behind the proxy, or undefined
 */
function globalTracerProvider() {
  const api = globalThis[API_GLOBAL];
  const proxy = api && api.trace;
  if (!proxy) return undefined;
  return typeof proxy.getDelegate === 'function' ? proxy.getDelegate() : proxy;
}

// The API's context key for the active span (createContextKey uses Symbol.for, so every copy of
// the API shares it).
const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN');

/**
 * The span active in the app's current context, through the context manager the app registered
 * (none registered: the API's root context, no span).
 * @returns {object|undefined}
 */
function activeSpan() {
  const api = globalThis[API_GLOBAL];
  const manager = api && api.context;
  if (!manager || typeof manager.active !== 'function') return undefined;
  const context = manager.active();
  return context && typeof context.getValue === 'function' ? context.getValue(SPAN_KEY) : undefined;
}

module.exports = { globalMeterProvider, globalTracerProvider, activeSpan };
