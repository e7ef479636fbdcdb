'use strict';

// The push protocol between a member and the holder: the path, header and version, the limits,
// the labels that tell processes apart, and what a push must look like to be kept.

const net = require('net');
const { processIdentity, processAttributes, PID_ATTRIBUTE, WORKER_ATTRIBUTE } = require('../../core/identity');
const { CATALOG } = require('../../snapshot/catalog');
const { countError } = require('../../core/errors');

const PUSH_PATH = '/uvscope/v1/push';
// A header a browser cannot send cross-origin without a CORS preflight, which is never answered.
const PUSH_HEADER = 'x-uvscope-push';
const PROTOCOL_VERSION = '1';
/** Largest snapshot a member may push (about 40x a process with 100 hostnames). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** A member unheard of for this many of its sampling intervals is dropped (unless a TTL is set). */
const TTL_INTERVALS = 3;
const MIN_TTL_MS = 1000;

const CATALOG_ATTRIBUTES = new Map(CATALOG.map((m) => [m.name, new Set(m.attributes)]));

/**
 * Whether a connection comes from this machine: loopback, or to and from the same address.
 * @param {import('net').Socket | undefined} socket
 * @returns {boolean}
 */
function fromThisMachine(socket) {
  const strip = (a) => String(a || '').replace(/^::ffff:/, '');
  const remote = strip(socket && socket.remoteAddress);
  if (remote === '::1' || /^127\./.test(remote)) return true;
  return remote !== '' && remote === strip(socket && socket.localAddress);
}

/**
 * Whether a Host header names an address (or localhost): a page on a rebound DNS name would send
 * its own name as Host; members send the address.
 * @param {unknown} header
 * @returns {boolean}
 */
function literalHost(header) {
  if (typeof header !== 'string') return false;
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(header) || /^([^:]+)(?::\d+)?$/.exec(header);
  return Boolean(m) && (m[1] === 'localhost' || net.isIP(m[1]) !== 0);
}

/**
 * A push as the holder keeps it, or null when it is not one. Points it does not know are left out.
 * @param {any} msg the parsed JSON body
 * @returns {{ pid: number, workerId?: string, instance: string, intervalMs: number, time: number,
 *   points: object[], findings: object[] } | null}
 */
function parseMessage(msg) {
  if (!msg || typeof msg !== 'object' || msg.v !== PROTOCOL_VERSION) return null;
  const { pid, workerId, instance, intervalMs, time, points, findings } = msg;
  if (!Number.isInteger(pid) || pid <= 0) return null;
  if (workerId !== undefined && (typeof workerId !== 'string' || !/^[\w.-]{1,32}$/.test(workerId))) return null;
  if (typeof instance !== 'string' || instance.length > 64) return null;
  if (!Number.isInteger(intervalMs) || intervalMs < 50 || intervalMs > 3600000) return null;
  if (!Number.isFinite(time) || !Array.isArray(points)) return null;
  const kept = [];
  for (const p of points) {
    const point = parsePoint(p);
    if (point) kept.push(point);
  }
  const kf = Array.isArray(findings) ? findings.filter((f) => f && typeof f === 'object' && typeof f.id === 'string').slice(0, 100) : [];
  return { pid, workerId, instance, intervalMs, time, points: kept, findings: kf };
}

// Only what the catalog declares: a name, and exactly its attributes (no two labels of a series
// can then collide, and no process can pass for another).
function parsePoint(p) {
  const known = p && typeof p === 'object' ? CATALOG_ATTRIBUTES.get(p.name) : undefined;
  if (!known) return null;
  const attributes = {};
  if (p.attributes !== undefined) {
    if (!p.attributes || typeof p.attributes !== 'object') return null;
    for (const [k, v] of Object.entries(p.attributes)) {
      if (!known.has(k) || typeof v !== 'string' || v.length > 4096) return null;
      attributes[k] = v;
    }
  }
  if (p.histogram !== undefined) {
    const h = p.histogram;
    if (!h || !Array.isArray(h.bounds) || !Array.isArray(h.counts) || h.bounds.length > 64) return null;
    if (h.counts.length < h.bounds.length || h.counts.length > h.bounds.length + 1) return null;
    if (!h.bounds.every(Number.isFinite) || !h.counts.every((c) => Number.isFinite(c) && c >= 0)) return null;
    if (!Number.isFinite(h.sum) || !Number.isFinite(h.count)) return null;
    return { name: p.name, attributes, histogram: { bounds: h.bounds, counts: h.counts, sum: h.sum, count: h.count } };
  }
  if (!Number.isFinite(p.value)) return null;
  return { name: p.name, attributes, value: p.value };
}

/**
 * Call fn inside the app's process: a throw or a rejection is counted, never passed on.
 * @param {() => unknown} fn
 */
function safeCall(fn) {
  try {
    const r = fn();
    if (r && typeof (/** @type {any} */ (r)).catch === 'function') /** @type {Promise<unknown>} */ (r).catch(() => countError('multiprocess'));
  } catch {
    countError('multiprocess');
  }
}

module.exports = {
  PUSH_PATH, PUSH_HEADER, PROTOCOL_VERSION, MAX_BODY_BYTES, TTL_INTERVALS, MIN_TTL_MS,
  PID_ATTRIBUTE, WORKER_ATTRIBUTE,
  processIdentity, processAttributes, fromThisMachine, literalHost, parseMessage, safeCall,
};
