'use strict';

// Every sampler, in one list. A new concern is a new file here plus one line below; the agent,
// the snapshot and every exporter pick its points up through the catalog (lib/metrics.js).

const { createResourcesSampler } = require('./resources');
const { createThreadpoolSampler } = require('./threadpool');
const { createEventLoopSampler } = require('./eventloop');
const { createDnsSampler } = require('./dns');
const { createConnectionsSampler } = require('./connections');
const { createMemorySampler } = require('./memory');

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
 * @property {string} name canonical dotted name, from the catalog (lib/metrics.js)
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
 * @property {Readonly<object>} options resolved options (lib/options.js)
 * @property {import('../own-io').OwnIo} ownIo the agent's own (unwrapped) lookup
 * @property {() => import('../resolver').ResolverConfig | null} resolver the resolv.conf in force
 */

/**
 * The samplers, in the order their points appear in the snapshot.
 * @type {readonly { name: string, create(ctx: SamplerContext): Sampler }[]}
 */
const SAMPLERS = Object.freeze([
  { name: 'resources', create: () => createResourcesSampler() },
  { name: 'threadpool', create: (ctx) => createThreadpoolSampler({ lookup: ctx.ownIo.lookup, tracer: ctx.options.tracer }) },
  { name: 'eventloop', create: () => createEventLoopSampler() },
  { name: 'dns', create: createDns },
  { name: 'connections', create: () => createConnectionsSampler() },
  { name: 'memory', create: () => createMemorySampler() },
]);

function createDns(ctx) {
  const sampler = createDnsSampler({ maxNames: ctx.options.dns.maxNames, resolver: ctx.resolver });
  ctx.ownIo.captureLookup(sampler.ownLookup);
  return sampler;
}

module.exports = { SAMPLERS };
