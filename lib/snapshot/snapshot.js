'use strict';

// The shape of a snapshot, the one thing that flows from the agent to findings, exporters, the
// report and /snapshot.json.

/**
 * A frozen point of a snapshot (see RawPoint in lib/sources/index.js).
 * @typedef {Readonly<import('../sources/index').RawPoint>} Point
 */

/**
 * snapshot.details: per-sampler figures for the last interval, keyed by sampler name, plus the
 * resolver configuration in force. Other samplers with details() appear under their name.
 * @typedef {object} SnapshotDetails
 * @property {import('../sources/dns/sampler').DnsDetails} [dns]
 * @property {import('../sources/connections').ConnectionsDetails} [connections]
 * @property {{ mainThreadCpuSeconds: number|null, mainThreadWaitSeconds: number|null, blockedOnCpuMaxSeconds?: number|null, processCpuSeconds?: number|null }} [eventloop]
 *   seconds in the interval: the main thread ran on a CPU and waited for one (Linux), the whole
 *   process's CPU time in the interval
 * @property {{ cpus: number, quotaCpus: number|null, affinityCpus: number, source: string, processCpuTotalSeconds: number, throttling: object|null }} [cpu]
 *   the CPU budget (lib/sources/cpu.js) and cumulative figures: processCpuTotalSeconds since the process started
 * @property {ResolverDetails} [resolver]
 */

/**
 * snapshot.details.resolver: resolv.conf as glibc reads it, and (up to 1000 of) the names
 * /etc/hosts answers.
 * @typedef {Omit<import('../sources/dns/resolver').ResolverConfig, 'hosts'> & { hostsNames: string[] }} ResolverDetails
 */

/**
 * A finding: a claim about the app, with the figures that prove it and what to change.
 * @typedef {object} Finding
 * @property {string} id
 * @property {'info'|'warning'|'critical'} severity
 * @property {string} summary
 * @property {Record<string, unknown>} evidence
 * @property {string[]} advice
 * @property {FindingImpact} impact what its cause cost in the window; findings are sorted by
 *   impact.score, costliest first, and severity follows from it
 */

/**
 * @typedef {object} FindingImpact
 * @property {number} [secondsPerSecond] seconds callers lost per second of the window
 * @property {number} [requests] lookups or requests affected
 * @property {number} [loopBlockedSeconds] seconds the event loop was blocked (a lower bound)
 * @property {number} score seconds lost per second
 */

/**
 * One sample, deep-frozen, except the figures kept per hostname: the DNS sampler's points
 * (dns.lookup.duration, nodejs.dns.lookup.queue_wait) are frozen but their histograms are live
 * views, and its details.dns.hosts[] entries (with their tail) are live objects, sealed rather than
 * frozen. The sampler updates them in place at the next sample, so a snapshot holds no new object
 * per kept hostname: a new one every interval lived until the next sample and survived V8's
 * scavenges in between, and at 300 kept names that grew the young generation by ~16 MiB
 * (bench/dns-names-memory.js). Readers treat them as read-only like the rest, and a reader that
 * keeps figures past the next sample (the findings' window, an exporter's previous values) copies
 * them. Every reader in uvscope reads a snapshot synchronously or copies what it keeps, except the
 * Prometheus text written in slices (exporters/prometheus): a scrape that a sample overtakes writes
 * that sample's figures for the hostname series it had not reached yet (each histogram's buckets,
 * sum and count still from one sample, all cumulative).
 * @typedef {object} Snapshot
 * @property {number} time epoch milliseconds
 * @property {number} intervalMs
 * @property {readonly Point[]} points
 * @property {SnapshotDetails} details
 * @property {readonly Finding[]} findings
 * @property {Signals|null} [signals] the latest interval's signals (null before the findings
 *   engine's first sample; absent in snapshots of agents before them)
 */

/**
 * snapshot.signals: each judgement about the latest interval, made once by the findings engine
 * (lib/findings/signals.js) with its limits, for the text report, the page and other readers.
 * @typedef {object} Signals
 * @property {boolean} poolHeld no pool thread was free: the work probe waited poolWaitS beyond the loop's delay
 * @property {number|null} poolWaitSeconds that wait (seconds, beyond the loop's delay), null without a reading
 * @property {boolean} poolThreadsStarved pool threads waited for a CPU (Node 22+: runnable threads at milliseconds per wait)
 * @property {number|null} poolCpuWaitShare the share of their runnable time pool threads waited for a CPU, where known
 * @property {boolean} cpuStarvedPool pool threads starved while the app's threads wanted more CPUs than its budget
 * @property {boolean} cpuStarvedLoop the main thread waited for a CPU most of the interval, the process using its budget
 * @property {number} loopBlockedSeconds the loop's longest block beyond its wait for a CPU, 0 below the limits
 * @property {boolean} loopRanLate the delay max or p99 crossed the limits (before the CPU wait is taken out)
 * @property {number} callbackWaitSeconds the longest a callback waited for the busy loop (delay max x busy share)
 */

/**
 * The point of a metric whose attributes include the given ones, from a snapshot's points.
 * @template {{ name: string, attributes: Record<string, string> }} P
 * @param {readonly P[]} points
 * @param {string} name canonical dotted name
 * @param {Record<string, string>} [attributes]
 * @returns {P | undefined}
 */
function findPoint(points, name, attributes) {
  // Plain loops: this runs several times a sample over every point (one per kept hostname). No
  // Object.keys: an array a call, most of a sample's findPoint garbage under V8's interpreter.
  for (let i = 0; i < points.length; i++) {
    const p = points[i];
    if (p.name === name && (!attributes || hasAttributes(p.attributes, attributes))) return p;
  }
  return undefined;
}

/** Whether `attributes` holds each of `wanted`'s own keys with the same value. */
function hasAttributes(attributes, wanted) {
  for (const k in wanted) {
    if (Object.prototype.hasOwnProperty.call(wanted, k) && attributes[k] !== wanted[k]) return false;
  }
  return true;
}

module.exports = { findPoint };
