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
 * Every sampler's points, frozen, in sampler order; a failing sampler is counted and skipped. A
 * point equal to the previous snapshot's at the same place is that frozen point (see reuseFrozen).
 * @param {import('../sources').Sampler[]} samplers
 * @param {import('../sources').Tick} tick
 * @param {readonly object[]} [previous] the previous snapshot's points
 * @returns {object[]}
 */
function samplePoints(samplers, tick, previous = NO_POINTS) {
  const points = [];
  let shift = 0;
  let searches = 8;
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
        // Frozen already: a point handed out again (the DNS sampler's, one per kept name).
        if (!Object.isExtensible(p)) {
          points.push(p);
          continue;
        }
        // The previous point of the same series: at the same place, or (once a series came or
        // went before it) found again, the places after it then read at the same shift; a few
        // searches a sample at most (each reads every point).
        let before = previous[points.length + shift];
        if (before !== undefined && !sameSeries(before, p)) {
          const at = searches-- > 0 ? findSeries(previous, p) : -1;
          before = at >= 0 ? previous[at] : undefined;
          if (at >= 0) shift = at - points.length;
        }
        points.push(reuseFrozen(before, p));
      }
    } catch (err) {
      reportError(`sampler:${sampler.name}`, err);
    }
  }
  return points;
}

// Whether two points are of one series: the same name and attributes.
function sameSeries(a, b) {
  if (!a || !b || a.name !== b.name) return false;
  const x = a.attributes;
  const y = b.attributes;
  if (x === y) return true;
  if (!x || !y) return false;
  let n = 0;
  for (const k in y) {
    if (x[k] !== y[k]) return false;
    n++;
  }
  return countKeys(x) === n;
}

// The place of p's series in points, or -1.
function findSeries(points, p) {
  for (let i = 0; i < points.length; i++) if (sameSeries(points[i], p)) return i;
  return -1;
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
 * The snapshot's points: the samplers' and the error points, in an array of exactly their length.
 * The array the samplers' points were pushed into has the slack its growth left (a third of it at
 * 150 points: 1,830 bytes where 1,220 hold them), and the snapshot's array lives until the next
 * sample, surviving V8's scavenges in between; the pushed one dies at once.
 * @param {readonly object[]} points
 * @param {readonly object[]} errors
 * @returns {object[]}
 */
function exactPoints(points, errors) {
  const n = points.length;
  const out = new Array(n + errors.length);
  for (let i = 0; i < n; i++) out[i] = points[i];
  for (let i = 0; i < errors.length; i++) out[n + i] = errors[i];
  return out;
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
  // reuseFrozen() with nothing to reuse: one walk that freezes, in one place.
  return reuseFrozen(undefined, value);
}

/**
 * Freeze `next` whole, in place (as deepFreeze), and hand back `previous` (or its parts) wherever
 * they are equal: the same keys (or length) and, leaf by leaf, the same values (Object.is). Most of
 * a snapshot is the same from one sample to the next (pool size, pending 0, the listen counters,
 * the tracer's state, a keep-alive app's connection counts): the previous snapshot's frozen objects
 * then stay the snapshot's, and the fresh copies die young, where each new object that lives until
 * the next sample would survive V8's scavenges in between (and push it to grow its young
 * generation) or be allocated in old space once V8 pretenures its site. Frozen objects are
 * immutable, so a reader that kept the previous snapshot sees no difference. Only arrays and plain
 * objects are compared (a Map with other contents enumerates no keys); objects that are not
 * extensible are taken as they are, as deepFreeze does (frozen ones handed out again compare by
 * identity; the DNS sampler's live views are the same objects every sample).
 * @template T
 * @param {unknown} previous the same place in the previous snapshot (frozen), or undefined
 * @param {T} next
 * @returns {T}
 */
function reuseFrozen(previous, next) {
  if (!next || typeof next !== 'object' || !Object.isExtensible(next)) return next;
  const o = /** @type {any} */ (next);
  const isArray = Array.isArray(o);
  const proto = Object.getPrototypeOf(o);
  const plain = isArray || proto === Object.prototype || proto === null;
  const prev = /** @type {any} */ (plain && previous !== null && typeof previous === 'object' && Object.getPrototypeOf(previous) === proto && Object.isFrozen(previous) ? previous : undefined);
  let equal = prev !== undefined;
  if (isArray) {
    if (equal && prev.length !== o.length) equal = false;
    for (let i = 0; i < o.length; i++) {
      const was = prev !== undefined ? prev[i] : undefined;
      const kid = reuseFrozen(was, o[i]);
      if (kid !== o[i]) o[i] = kid;
      if (equal && !sameValue(kid, was)) equal = false;
    }
  } else {
    let keys = 0;
    for (const k in o) {
      keys++;
      // A key prev lacks reads undefined (or what its prototype has): told apart by the count below.
      const was = prev !== undefined ? prev[k] : undefined;
      const kid = reuseFrozen(was, o[k]);
      if (kid !== o[k]) o[k] = kid;
      if (equal && !sameValue(kid, was)) equal = false;
    }
    // As many keys in prev, each of next's read the same there: the same keys.
    if (equal) equal = countKeys(prev) === keys;
  }
  Object.freeze(o);
  return equal ? prev : next;
}

// Object.is without the call: NaN is NaN, 0 is not -0.
const sameValue = (a, b) => (a === b ? a !== 0 || 1 / a === 1 / b : a !== a && b !== b);

function countKeys(o) {
  let n = 0;
  // eslint-disable-next-line no-unused-vars
  for (const k in o) n++;
  return n;
}

/** @type {readonly object[]} */
const NO_POINTS = Object.freeze([]);

module.exports = { countResources, samplePoints, collectDetails, endIntervals, errorPoints, exactPoints, deepFreeze, reuseFrozen };
