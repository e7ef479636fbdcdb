'use strict';

const { metricDef } = require('./metric-def');

// Requests are short-lived operations (a lookup, a write); handles are long-lived objects (a
// socket, a server, a timer). process.getActiveResourcesInfo() returns bare type names, so the
// split follows Node's naming: its request wraps end in Req/ReqWrap/ReqCallback/ReqPromise, plus
// the stream/UDP request wraps below (src/node_*.h, src/stream_base.h, src/udp_wrap.h).
const REQUEST_TYPES = new Set(['WriteWrap', 'ShutdownWrap', 'SendWrap', 'ConnectWrap', 'FileHandleCloseReq']);
const REQUEST_PATTERN = /Req(Wrap|Callback|Promise)?$/;

// Reported as 0 from the first sample, so an alert on a backlog has a series before the backlog.
const ALWAYS_REPORTED_REQUESTS = Object.freeze(['GetAddrInfoReqWrap', 'GetNameInfoReqWrap', 'FSReqCallback']);

// A bound on distinct type names kept for zero-reporting; Node has a few dozen.
const MAX_TYPES = 256;

/** @type {readonly import('./metric-def').MetricDef[]} */
const METRICS = Object.freeze([
  metricDef('nodejs.uv.handles.active', 'gauge', '{handle}', ['nodejs.uv.handle.type'],
    'Active libuv handles keeping the loop alive, by type, from process.getActiveResourcesInfo().'),
  metricDef('nodejs.uv.requests.active', 'gauge', '{request}', ['nodejs.uv.request.type'],
    'Active libuv requests by type (GetAddrInfoReqWrap is a pending dns.lookup), from process.getActiveResourcesInfo().'),
]);

/**
 * Whether a resource type name is a libuv request (rather than a handle).
 * @param {string} type
 */
function isRequestType(type) {
  return REQUEST_TYPES.has(type) || REQUEST_PATTERN.test(type);
}

/**
 * Count resource type names.
 * @param {readonly string[]} infos e.g. process.getActiveResourcesInfo()
 * @returns {Map<string, number>}
 */
function countTypes(infos) {
  const counts = new Map();
  for (const t of infos) counts.set(t, (counts.get(t) || 0) + 1);
  return counts;
}

/**
 * Active handles and requests by type. Types seen before and now gone report 0.
 * @returns {{ name: string, sample(tick: { resources: Map<string, number> }): object[], close(): void }}
 */
function createResourcesSampler() {
  const seen = { handles: new Set(), requests: new Set(ALWAYS_REPORTED_REQUESTS) };
  return {
    name: 'resources',
    sample(tick) {
      const handles = new Map();
      const requests = new Map();
      for (const [type, n] of tick.resources) {
        const bucket = isRequestType(type) ? requests : handles;
        bucket.set(type, n);
      }
      return [
        ...points('nodejs.uv.handles.active', 'nodejs.uv.handle.type', handles, seen.handles),
        ...points('nodejs.uv.requests.active', 'nodejs.uv.request.type', requests, seen.requests),
      ];
    },
    close() {},
  };
}

function points(name, attribute, counts, seen) {
  for (const type of counts.keys()) if (seen.size < MAX_TYPES) seen.add(type);
  const out = [];
  for (const type of seen) out.push({ name, attributes: { [attribute]: type }, value: counts.get(type) || 0 });
  for (const [type, value] of counts) if (!seen.has(type)) out.push({ name, attributes: { [attribute]: type }, value });
  return out;
}

/** @type {import('./index').Source} */
const source = Object.freeze({
  name: 'resources',
  settings: Object.freeze([]),
  metrics: METRICS,
  create: () => createResourcesSampler(),
});

module.exports = { source, createResourcesSampler, isRequestType, countTypes };
