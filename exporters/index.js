'use strict';

// exporters/: where the catalog's metrics leave the process. Every exporter, in one list. An
// exporter is a folder exporters/<name>/ with a manifest.js (its name and settings rows; light, it
// imports only lib/core and lib/settings) and an index.js exporting
// createExporter(context), plus one line below. lib/agent/options.js takes the names and rows from
// the manifests; each index.js is loaded only when its exporter is on, so its optional dependencies
// (prom-client, hot-shots, OpenTelemetry) load only then. Exporters may import lib/ up to
// lib/report/ (scripts/check-requires.js).

/**
 * The exporter contract. Push exporters get export(snapshot) after every sample; pull exporters
 * read context.latest() when asked. Exporters never call samplers.
 * @typedef {object} Exporter
 * @property {string} name
 * @property {(snapshot: import('../lib/snapshot/snapshot').Snapshot) => void} [export]
 * @property {() => (void|Promise<void>)} close
 */

/**
 * What an exporter is given: the agent's narrow face, never the Agent itself.
 * @typedef {object} ExporterContext
 * @property {Readonly<object>} options resolved options (lib/agent/options.js)
 * @property {() => import('../lib/snapshot/snapshot').Snapshot | null} latest the last snapshot (null before the first sample)
 * @property {() => import('../lib/snapshot/snapshot').Snapshot} sampleNow take a sample now (e.g. a last one before exit)
 * @property {typeof import('../lib/core/channels')} channels the diagnostics channels (lib/core/channels.js)
 * @property {Function} ownLookup dns.lookup-compatible, not counted as the app's (lib/core/own-io.js)
 * @property {(protocol: string, options?: object) => import('http').Agent} ownAgent an http(s)
 *   Agent for the exporter's own requests, not counted as the app's (lib/core/own-io.js)
 * @property {import('../lib/endpoint/server').AgentServer | null} server the agent's HTTP endpoint, to add
 *   routes to (null when it opens none: UVSCOPE_EXPORTERS=none, or the app gave its own registry)
 */

/**
 * An exporter's declaration (its manifest.js) and how to load its implementation.
 * @typedef {object} ExporterEntry
 * @property {string} name
 * @property {readonly import('../lib/core/setting').Setting[]} settings its settings rows
 * @property {() => { createExporter(context: ExporterContext): Exporter }} load
 */

/**
 * @param {{ name: string, settings: ExporterEntry['settings'] }} manifest
 * @param {ExporterEntry['load']} load
 * @returns {Readonly<ExporterEntry>}
 */
const entry = (manifest, load) => Object.freeze({ name: manifest.name, settings: manifest.settings, load });

/** @type {readonly ExporterEntry[]} */
const EXPORTERS = Object.freeze([
  entry(require('./prometheus/manifest'), () => require('./prometheus')),
  entry(require('./otlp/manifest'), () => require('./otlp')),
  entry(require('./datadog/manifest'), () => require('./datadog')),
]);

const BY_NAME = new Map(EXPORTERS.map((e) => [e.name, e]));

/**
 * Create one exporter by name.
 * @param {string} name an exporter's name
 * @param {ExporterContext} context
 * @returns {Exporter}
 */
function createExporter(name, context) {
  const e = BY_NAME.get(name);
  if (!e) throw new Error(`uvscope: no exporter ${name}`);
  return e.load().createExporter(context);
}

module.exports = { EXPORTERS, createExporter };
