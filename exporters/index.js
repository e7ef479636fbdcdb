'use strict';

// Every exporter, in one list. An exporter is a folder exporters/<name>/ whose index.js exports
// createExporter(context), plus one line below. Each is loaded only when it is on, so its
// optional dependencies (prom-client, hot-shots, OpenTelemetry) load only then.

/**
 * The exporter contract. Push exporters get export(snapshot) after every sample; pull exporters
 * read context.latest() when asked. Exporters never call samplers.
 * @typedef {object} Exporter
 * @property {string} name
 * @property {(snapshot: import('./snapshot').Snapshot) => void} [export]
 * @property {() => (void|Promise<void>)} close
 */

/**
 * What an exporter is given: the agent's narrow face, never the Agent itself.
 * @typedef {object} ExporterContext
 * @property {Readonly<object>} options resolved options (lib/agent/options.js)
 * @property {() => import('./snapshot').Snapshot | null} latest the last snapshot (null before the first sample)
 * @property {() => import('./snapshot').Snapshot} sampleNow take a sample now (e.g. a last one before exit)
 * @property {typeof import('./channels')} channels the diagnostics channels (lib/core/channels.js)
 * @property {Function} ownLookup dns.lookup-compatible, not counted as the app's (lib/core/own-io.js)
 * @property {(protocol: string, options?: object) => import('http').Agent} ownAgent an http(s)
 *   Agent for the exporter's own requests, not counted as the app's (lib/core/own-io.js)
 * @property {import('./server').AgentServer | null} server the agent's HTTP endpoint, to add
 *   routes to (null when it opens none: UVSCOPE_EXPORTERS=none, or the app gave its own registry)
 */

/** @type {Readonly<Record<string, () => { createExporter(context: ExporterContext): Exporter }>>} */
const EXPORTERS = Object.freeze({
  prometheus: () => require('./prometheus'),
  otlp: () => require('./otlp'),
  datadog: () => require('./datadog'),
});

/**
 * Exporters with work that cannot wait for the agent's second phase (lib/agent/agent.js start()): their
 * early(context) runs in the preload, and what it returns is handed to createExporter later.
 * Only these exporters' modules load in the preload; the others' load with their libraries.
 * @type {Readonly<Record<string, () => (context: ExporterContext) => { close(): void }>>}
 */
const EARLY = Object.freeze({
  datadog: () => require('./datadog').early, // tags on dd-trace's dns.lookup spans
});

/**
 * An exporter's early work (see EARLY), if it has any.
 * @param {string} name a key of EXPORTERS
 * @param {ExporterContext} context
 * @returns {{ close(): void } | undefined}
 */
function startEarly(name, context) {
  return EARLY[name] ? EARLY[name]()(context) : undefined;
}

/**
 * Create one exporter by name.
 * @param {string} name a key of EXPORTERS
 * @param {ExporterContext} context
 * @param {object} [pre] what startEarly(name, context) returned
 * @returns {Exporter}
 */
function createExporter(name, context, pre) {
  const mod = EXPORTERS[name]();
  return pre === undefined ? mod.createExporter(context) : mod.createExporter(context, pre);
}

module.exports = { EXPORTERS, createExporter, startEarly };
