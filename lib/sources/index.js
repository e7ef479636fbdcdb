'use strict';

// sources/: what uvscope measures. Every source, in one list: a source is a file (or a folder with
// an index.js) that exports `source`, its declaration: name, when it starts, the settings rows it
// reads, the metrics it produces (with their bucket bounds) and create(). A new concern is a new
// file here plus one line below; lib/agent/options.js takes its settings, lib/snapshot/catalog.js
// its metrics, and every exporter its points through the catalog.
// Sources may import lib/core/ and lib/settings/ only (scripts/check-requires.js).

/**
 * What every sample hands each sampler: figures taken once for all of them.
 * @typedef {object} Tick
 * @property {Map<string, number>} resources process.getActiveResourcesInfo() counted by type
 *   (empty when the Node version lacks it or it failed)
 * @property {LoopReading} [loop] the event-loop source's reading of the interval (it samples first;
 *   the blockers capture's start reads it)
 */

/**
 * The event-loop source's one reading of an interval (lib/sources/eventloop.js), as its details
 * give it: its longest lateness, its span, the main thread's schedstat over it and what the app
 * blocked at least (null where the kernel does not tell).
 * @typedef {object} LoopReading
 * @property {number} lateSeconds
 * @property {number} spanSeconds
 * @property {number | null} mainThreadCpuSeconds
 * @property {number | null} mainThreadWaitSeconds
 * @property {number | null} blockedOnCpuMaxSeconds the lateness less the main thread's wait over it
 */

/**
 * A point as a sampler returns it (the agent freezes it into the snapshot). `value` for gauges
 * and counters (counters are cumulative), `histogram` for histograms.
 * @typedef {object} RawPoint
 * @property {string} name canonical dotted name, from the catalog (lib/snapshot/catalog.js)
 * @property {Record<string, string>} attributes
 * @property {number} [value]
 * @property {import('../core/histogram').HistogramSnapshot} [histogram]
 */

/**
 * The sampler contract. The agent calls, at every sample: sample(tick) on each sampler, then
 * details() on each that has it, then endInterval() on each that has it. Each call is isolated:
 * one sampler's failure is counted and the others go on.
 * @typedef {object} Sampler
 * @property {string} name also the key of its details in snapshot.details
 * @property {(tick: Tick) => RawPoint[]} sample
 * @property {() => object} [details] plain JSON figures for the interval since the last
 *   endInterval() (snapshot.details[name]); no side effect, so it may be called more than once
 * @property {() => void} [endInterval] starts a new interval: called once per sample, after
 *   details() of every sampler
 * @property {() => void} close restores what it wrapped, drops its subscriptions and timers
 */

/**
 * What a sampler factory is given.
 * @typedef {object} SamplerContext
 * @property {Readonly<object>} options resolved options (lib/agent/options.js)
 * @property {import('../core/own-io').OwnIo} ownIo the agent's own (unwrapped) lookup
 * @property {() => import('./dns/resolver').ResolverConfig | null} resolver the resolv.conf in force
 */

/**
 * A source's declaration. `early` ones are created in the preload, before the app's first line
 * (they wrap or subscribe to what the app's top-level code may already use: dns.lookup, the
 * connection channels); the others on the agent's first timer tick (lib/agent/agent.js start()).
 * @typedef {object} Source
 * @property {string} name also the key of its details in snapshot.details
 * @property {boolean | ((options: object) => boolean)} [early]
 * @property {readonly import('../core/setting').Setting[]} settings the settings rows it reads
 * @property {readonly import('./metric-def').MetricDef[]} metrics what it produces, in catalog order
 * @property {(ctx: SamplerContext) => Sampler} create
 */

/**
 * A source whose file loads only when the agent's second phase starts (or when its metrics are
 * first read): for a source that is not early and reads no setting, so the preload needs nothing
 * from it. Its file still exports `source`; test/agent/preload.test.js checks that it declares no
 * settings, is not early and has this name.
 * @param {string} name the name its `source` declares
 * @param {() => { source: Source }} load requires its file
 * @returns {Readonly<Source>}
 */
function later(name, load) {
  return Object.freeze({
    name,
    early: false,
    settings: Object.freeze([]),
    get metrics() {
      return load().source.metrics;
    },
    create: (ctx) => load().source.create(ctx),
  });
}

/**
 * The sources, in the order their points appear in the snapshot and their metrics in the catalog.
 * A source that is early or reads settings is listed by its `source` (its file loads in the
 * preload: keep it a light declaration, as dns/index.js and threadpool/index.js are); any other
 * through later().
 * @type {readonly Source[]}
 */
const SOURCES = Object.freeze([
  later('resources', () => require('./resources')),
  require('./threadpool').source,
  later('eventloop', () => require('./eventloop')),
  require('./blockers').source,
  require('./dns').source,
  require('./connections').source,
  require('./listen').source,
  later('memory', () => require('./memory')),
  later('cpu', () => require('./cpu')),
]);

module.exports = { SOURCES, later };
