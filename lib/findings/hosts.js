'use strict';

// The window's per-hostname figures (lib/findings/window.js keeps one list of them per summary):
// what the rules read of a hostname's interval (compactHosts), merged into 5 s buckets
// (mergeHosts) with the figures that leave the window reused (HostPool).

// Per-hostname figures in the window are merged into at most HOST_BUCKETS buckets (5 s each over
// 60 s): the latest summary of a bucket carries the bucket's sums (and the largest per-interval
// figures), the earlier ones none. Rules sum and take maxima over the window, so they see the same
// figures as without buckets, and memory per hostname does not grow with the number of
// intervals. A bucket leaves the window with its latest interval, so host figures cover the last
// 60 to 65 s.
const HOST_BUCKETS = 12;
// Per-interval counts and sums of a hostname's details, added up when intervals merge; max* fields
// take the largest; any other number is a figure of the moment and takes the latest.
const SUMMED = new Set(['lookups', 'errors', 'seconds', 'duplicates', 'timeouts', 'queueWaitSeconds', 'resolveSeconds', 'queuedLookups', 'intervals', 'noCacheSeconds', 'noCacheQueueWait']);
/** @type {object[]} the list of a summary without hostnames (frozen: never pushed to) */
const NO_HOSTS = /** @type {any} */ (Object.freeze([]));

/**
 * Merge the latest summary's hostnames into the bucket of the one before, while that bucket is
 * younger than bucketMs; the earlier summary then keeps none. The bucket's list is appended to in
 * place (one list a bucket, not one a sample), and a latest figure merged into the bucket's goes
 * back to spare.
 * @param {object[]} window interval summaries, oldest first
 * @param {number} bucketMs
 * @param {HostPool} [spare]
 */
function mergeHosts(window, bucketMs, spare = null) {
  const summary = window[window.length - 1];
  const prev = window.length > 1 ? window[window.length - 2] : null;
  if (!prev || prev.hostsSince === undefined || summary.time - prev.hostsSince >= bucketMs) {
    summary.hostsSince = summary.time;
    return;
  }
  summary.hostsSince = prev.hostsSince;
  // Each name once, in the order it first came, with the last figures of that name (a name twice
  // in the bucket keeps the later in the earlier's place): the bucket's list itself when it holds
  // each name once, as it does unless a sampler repeats a name.
  const index = mergeIndex;
  if (index.size > MERGE_INDEX_MAX) index.clear();
  let merged = prev.hosts === NO_HOSTS ? [] : prev.hosts;
  for (let i = 0; i < prev.hosts.length; i++) {
    const h = prev.hosts[i];
    const at = indexOf(index, merged, h.name, i);
    if (at === -1) {
      index.set(h.name, i);
      continue;
    }
    // A name again: a new list, built as the names come.
    merged = [];
    for (let j = 0; j < prev.hosts.length; j++) {
      const g = prev.hosts[j];
      const k = findOrAppend(index, merged, g);
      if (k !== -1) merged[k] = g;
    }
    break;
  }
  for (let i = 0; i < summary.hosts.length; i++) {
    const h = summary.hosts[i];
    const at = findOrAppend(index, merged, h);
    if (at === -1) continue;
    const m = merged[at];
    for (const k in h) {
      if (typeof h[k] !== 'number') continue;
      if (SUMMED.has(k)) m[k] = (m[k] || 0) + h[k];
      else if (k.startsWith('max')) m[k] = Math.max(m[k] || 0, h[k]);
      else m[k] = h[k]; // a figure of the moment (inFlight, totalLookups, ...): the latest
    }
    if (spare && m !== h) spare.put(h);
  }
  summary.hosts = merged;
  prev.hosts = NO_HOSTS;
}

// Where name is in list[0..end), or -1: mergeIndex gives the place it was last put at, which
// holds for this list only if the name is there (an entry from an earlier merge points
// elsewhere). One Map for the engine's life, never cleared while small: Map#clear() allocates a
// new table, which then grows again with every sample's names.
function indexOf(index, list, name, end) {
  const at = index.get(name);
  return at !== undefined && at < end && list[at].name === name ? at : -1;
}

// Where the name of h is in list, or -1 after appending h to it (and indexing it there).
function findOrAppend(index, list, h) {
  const at = indexOf(index, list, h.name, list.length);
  if (at === -1) {
    index.set(h.name, list.length);
    list.push(h);
  }
  return at;
}

const mergeIndex = new Map();
const MERGE_INDEX_MAX = 4096;

/**
 * Compact host figures that left the window, for compactHosts to fill again: the window's
 * hostnames then make no new objects in a steady app (a bucket keeps one per name for 60 s,
 * and each interval's are merged into them).
 */
class HostPool {
  #free = [];

  /** A spare figure, or null. */
  take() {
    return this.#free.length > 0 ? this.#free.pop() : null;
  }

  /** @param {object} h a compact figure nothing refers to any more */
  put(h) {
    if (this.#free.length < HOST_POOL_MAX) this.#free.push(h);
  }

  /** @param {readonly object[]} hosts a list that left the window */
  release(hosts) {
    for (let i = 0; i < hosts.length; i++) this.put(hosts[i]);
  }
}

const HOST_POOL_MAX = 1024;

// What the rules read of a hostname's interval, for the hostnames active in it: the window holds
// these, merged (mergeHosts), not the snapshot's full details with callers (~20 KB per kept
// hostname over a 60 s window at a 1 s interval).
function compactHosts(dns, spare) {
  const hosts = (dns && dns.hosts) || [];
  /** @type {object[]} */
  let out = NO_HOSTS;
  // Index loops: this runs once a sample over every hostname, where for...of makes an iterator
  // result per hostname.
  for (let i = 0; i < hosts.length; i++) {
    const h = hosts[i];
    if (!isActive(h)) continue;
    if (out === NO_HOSTS) out = [];
    const c = (spare && spare.take()) || newHostFigure();
    // What the rules read; add a field here to read it, and to newHostFigure() (in this order: a
    // figure taken from spare has these fields in it already).
    c.name = h.name;
    c.lookups = h.lookups;
    c.duplicates = h.duplicates;
    c.maxDuplicates = h.duplicates;
    c.maxInFlight = h.maxInFlight;
    c.timeouts = h.timeouts;
    c.maxSeconds = h.maxSeconds;
    // each lookup's split (impact of threadpool-dns-saturated) and dns-no-cache's cost (zeroed
    // where other work held the pool), intervals with lookups (its sustained repetition)
    c.seconds = h.seconds || 0;
    c.queueWaitSeconds = h.queueWaitSeconds || 0;
    c.queuedLookups = h.queuedLookups || 0;
    c.noCacheSeconds = h.seconds || 0;
    c.noCacheQueueWait = h.queueWaitSeconds || 0;
    c.intervals = h.lookups > 0 ? 1 : 0;
    // in flight at the sample (with those of the sample before, the lookups that called back)
    c.inFlight = h.inFlight || 0;
    out.push(c);
  }
  return out;
}

// A compact host figure with every field compactHosts() sets, in its order: made as one literal,
// the 14 fields are inside the object; assigned one by one to a `{}` (as before), all but 4 went to
// a separate property array (~86 bytes more a figure, and the window keeps ~600 of them: 50 names in
// 12 buckets). A field set that the literal lacks goes there too (inFlight did: 40 bytes a figure).
function newHostFigure() {
  return {
    name: '', lookups: 0, duplicates: 0, maxDuplicates: 0, maxInFlight: 0, timeouts: 0, maxSeconds: 0,
    seconds: 0, queueWaitSeconds: 0, queuedLookups: 0, noCacheSeconds: 0, noCacheQueueWait: 0, intervals: 0,
    inFlight: 0,
  };
}

/**
 * Whether a hostname did anything in the interval.
 * @param {{ lookups: number, duplicates: number, timeouts: number, maxInFlight: number, maxSeconds: number }} h
 */
function isActive(h) {
  return h.lookups > 0 || h.duplicates > 0 || h.timeouts > 0 || h.maxInFlight > 0 || h.maxSeconds > 0;
}

// Hostnames whose recent lookups (the sampler's last 60 s) have a p99 above the median: the
// sample's own (frozen) host details, not copies, since only the latest summary keeps them and
// the latest snapshot holds them anyway.
function tailHosts(dns) {
  return ((dns && dns.hosts) || []).filter((h) => h.recentLookups > 0 && h.p50 !== null && h.p99 > h.p50);
}

/**
 * Whether an interval's hostnames (a summary's: its bucket's, once merged) looked anything up.
 * @param {readonly { lookups: number }[]} hosts
 */
function anyLookups(hosts) {
  for (let i = 0; i < hosts.length; i++) if (hosts[i].lookups > 0) return true;
  return false;
}

module.exports = { HOST_BUCKETS, NO_HOSTS, mergeHosts, HostPool, compactHosts, isActive, tailHosts, anyLookups };
