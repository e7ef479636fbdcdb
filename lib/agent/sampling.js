'use strict';

// The steps of one sample, over the agent's samplers: each call isolated, a failure counted under
// its sampler and skipped. The agent composes them in sampleNow() (lib/agent/agent.js).

const { reportError, errorCountsSnapshot } = require('../core/errors');
const { injectFault } = require('../core/faults');

/**
 * process.getActiveResourcesInfo() counted by type, once for every sampler.
 * @returns {Map<string, number>}
 */
function countResources() {
  try {
    if (typeof process.getActiveResourcesInfo === 'function') return require('../sources/resources').countTypes(process.getActiveResourcesInfo());
  } catch (err) {
    reportError('sampler:resources', err);
  }
  return new Map();
}

/**
 * Every sampler's points, frozen, in sampler order; a failing sampler is counted and skipped.
 * @param {import('../sources').Sampler[]} samplers
 * @param {import('../sources').Tick} tick
 * @returns {object[]}
 */
function samplePoints(samplers, tick) {
  const points = [];
  tick.points = points;
  // Index loops over the samplers too (here and below): no iterator result per sampler.
  for (let s = 0; s < samplers.length; s++) {
    const sampler = samplers[s];
    try {
      injectFault(`sample:${sampler.name}`);
      // Samplers return fresh points: frozen in place rather than copied (fewer objects per sample).
      // An index loop: once a second this runs in V8's interpreter, where for...of makes an
      // iterator result per point (one per kept hostname and series).
      const own = sampler.sample(tick);
      for (let i = 0; i < own.length; i++) {
        const p = own[i];
        if (Object.isExtensible(p)) {
          Object.freeze(p.attributes);
          Object.freeze(p);
        }
        points.push(p);
      }
    } catch (err) {
      reportError(`sampler:${sampler.name}`, err);
    }
  }
  return points;
}

/**
 * Every sampler's details() by sampler name.
 * @param {import('../sources').Sampler[]} samplers
 * @returns {import('../snapshot/snapshot').SnapshotDetails}
 */
function collectDetails(samplers) {
  const details = {};
  for (let s = 0; s < samplers.length; s++) {
    const sampler = samplers[s];
    if (typeof sampler.details !== 'function') continue;
    try {
      injectFault(`details:${sampler.name}`);
      details[sampler.name] = sampler.details();
    } catch (err) {
      reportError(`sampler:${sampler.name}`, err);
    }
  }
  return details;
}

/**
 * The interval boundary: every sampler with interval figures starts a new interval.
 * @param {import('../sources').Sampler[]} samplers
 */
function endIntervals(samplers) {
  for (let s = 0; s < samplers.length; s++) {
    const sampler = samplers[s];
    if (typeof sampler.endInterval !== 'function') continue;
    try {
      sampler.endInterval();
    } catch (err) {
      reportError(`sampler:${sampler.name}`, err);
    }
  }
}

/**
 * uvscope.errors: failures inside uvscope so far, by component.
 * @returns {object[]} frozen points
 */
function errorPoints() {
  const out = [];
  for (const [component, value] of errorCountsSnapshot()) {
    out.push(Object.freeze({ name: 'uvscope.errors', attributes: Object.freeze({ 'uvscope.component': component }), value }));
  }
  return out;
}

/**
 * Freeze a snapshot whole, in place.
 * for...in rather than Object.values(): no array per object (a snapshot holds thousands of
 * objects with many hostnames, and this runs every sample); arrays by index, since for...in over
 * an array makes a string per index. Objects that are not extensible are skipped whole: frozen ones
 * handed out again, and the live ones a sampler updates in place at each sample (sealed: the DNS
 * sampler's per-hostname details and histogram views, lib/snapshot/snapshot.js).
 * @template T
 * @param {T} value
 * @returns {T}
 */
function deepFreeze(value) {
  if (value && typeof value === 'object' && Object.isExtensible(value)) {
    Object.freeze(value);
    if (Array.isArray(value)) for (let i = 0; i < value.length; i++) deepFreeze(value[i]);
    else for (const k in value) deepFreeze(value[k]);
  }
  return value;
}

module.exports = { countResources, samplePoints, collectDetails, endIntervals, errorPoints, deepFreeze };
