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

module.exports = { globalMeterProvider };
