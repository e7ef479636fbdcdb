'use strict';

// Every sampler, in one list. A new concern is a new file here plus one line below; the agent,
// the snapshot and every exporter pick its points up through the catalog (lib/snapshot/catalog.js).

// Each sampler's module loads when it is created: the preload creates only the early ones.

/**
 * What every sample hands each sampler: figures taken once for all of them.
 * @typedef {object} Tick
 * @property {Map<string, number>} resources process.getActiveResourcesInfo() counted by type
 *   (empty when the Node version lacks it or it failed)
 */

/**
 * A point as a sampler returns it (the agent freezes it into the snapshot). `value` for gauges
 * and counters (counters are cumulative), `histogram` for histograms.
 * @typedef {object} RawPoint
 * @property {string} name canonical dotted name, from the catalog (lib/snapshot/catalog.js)
 * @property {Record<string, string>} attributes
 * @property {number} [value]
 * @property {import('../histogram').HistogramSnapshot} [histogram]
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
 * @property {import('../own-io').OwnIo} ownIo the agent's own (unwrapped) lookup
 * @property {() => import('../resolver').ResolverConfig | null} resolver the resolv.conf in force
 */

/**
 * The samplers, in the order their points appear in the snapshot. `early` ones are created in the
 * preload, before the app's first line (they wrap or subscribe to what the app's top-level code
 * may already use: dns.lookup, the connection channels); the others on the agent's first timer
 * tick (lib/agent/agent.js start()).
 * @type {readonly { name: string, early?: boolean | ((options: object) => boolean), create(ctx: SamplerContext): Sampler }[]}
 */
const SAMPLERS = Object.freeze([
  { name: 'resources', create: () => require('./resources').createResourcesSampler() },
  // With the tracer on (UVSCOPE_TRACER=on) it follows jobs from the app's first line.
  { name: 'threadpool', early: (options) => Boolean(options.tracer && options.tracer.mode === 'on'), create: (ctx) => require('./threadpool/sampler').createThreadpoolSampler({ lookup: ctx.ownIo.lookup, tracer: ctx.options.tracer }) },
  { name: 'eventloop', create: () => require('./eventloop').createEventLoopSampler() },
  { name: 'dns', early: true, create: createDns },
  { name: 'connections', early: true, create: () => require('./connections').createConnectionsSampler() },
  { name: 'memory', create: () => require('./memory').createMemorySampler() },
]);

function createDns(ctx) {
  const sampler = require('./dns/sampler').createDnsSampler({ maxNames: ctx.options.dns.maxNames, resolver: ctx.resolver });
  ctx.ownIo.captureLookup(sampler.ownLookup);
  return sampler;
}

module.exports = { SAMPLERS };
