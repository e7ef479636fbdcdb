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
  // An index loop: once a sample over every active resource, where for...of in V8's interpreter
  // makes an iterator result per entry.
  for (let i = 0; i < infos.length; i++) counts.set(infos[i], (counts.get(infos[i]) || 0) + 1);
  // uvscope's own requests in flight are not the app's: left out, as if never listed.
  ownRequests.forEach((own, type) => {
    const n = counts.get(type);
    if (own <= 0 || n === undefined) return;
    if (n > own) counts.set(type, n - own);
    else counts.delete(type);
  });
  return counts;
}

/**
 * uvscope's own requests in flight, by the type process.getActiveResourcesInfo() lists them as
 * (the threadpool's work probe: an fs.access, 'FSReqCallback'), which countTypes() leaves out: one
 * count for the process, as the list is the process's. Whoever makes such a request adds 1 right
 * after making it and takes 1 away at its callback (ownRequestStarted/Ended).
 * @type {Map<string, number>}
 */
const ownRequests = new Map();

/** @param {string} type */
function ownRequestStarted(type) {
  ownRequests.set(type, (ownRequests.get(type) || 0) + 1);
}

/** @param {string} type */
function ownRequestEnded(type) {
  const n = ownRequests.get(type) || 0;
  ownRequests.set(type, n > 0 ? n - 1 : 0);
}

/**
 * Active handles and requests by type. Types seen before and now gone report 0.
 * @returns {{ name: string, sample(tick: { resources: Map<string, number> }): object[], close(): void }}
 */
function createResourcesSampler() {
  const seen = { handles: new Set(), requests: new Set(ALWAYS_REPORTED_REQUESTS) };
  // One attributes object per type for the sampler's life (frozen with the first point that
  // carries it): a sample makes one object per point, not two.
  const attributes = { handles: new Map(), requests: new Map() };
  // The sample's counts by kind, read only inside it: zeroed and filled again at each sample, not
  // cleared (Map#clear() allocates a new table, which the refill then grows: ~300 bytes a sample
  // that lived until the next one and survived V8's scavenges in between). A type absent from this
  // sample reads 0; they are cleared only once they would outgrow the bound on types.
  const handles = new Map();
  const requests = new Map();
  const zero = (_, type, counts) => counts.set(type, 0);
  const reset = (counts) => (counts.size > 2 * MAX_TYPES ? counts.clear() : counts.forEach(zero));
  const split = (n, type) => (isRequestType(type) ? requests : handles).set(type, n);
  const handlePoints = pointsOf('nodejs.uv.handles.active', 'nodejs.uv.handle.type', handles, seen.handles, attributes.handles);
  const requestPoints = pointsOf('nodejs.uv.requests.active', 'nodejs.uv.request.type', requests, seen.requests, attributes.requests);
  return {
    name: 'resources',
    sample(tick) {
      reset(handles);
      reset(requests);
      tick.resources.forEach(split);
      const out = [];
      handlePoints(out);
      requestPoints(out);
      return out;
    },
    close() {},
  };
}

/**
 * One kind's points (name, by `attribute`): every type seen so far (0 when gone), then types
 * past MAX_TYPES with their count. Its callbacks are made once, not at each sample.
 * @returns {(out: object[]) => void}
 */
function pointsOf(name, attribute, counts, seen, attributes) {
  const attrs = (type) => {
    let a = attributes.get(type);
    if (a === undefined) {
      a = { [attribute]: type };
      if (attributes.size < 2 * MAX_TYPES) attributes.set(type, a);
    }
    return a;
  };
  /** @type {object[]} */
  let out = [];
  const see = (_, type) => {
    if (seen.size < MAX_TYPES) seen.add(type);
  };
  const pushSeen = (type) => out.push({ name, attributes: attrs(type), value: counts.get(type) || 0 });
  const pushUnseen = (value, type) => {
    // A type past the bound is reported while it is there (counts keeps it at 0 once gone).
    if (value > 0 && !seen.has(type)) out.push({ name, attributes: attrs(type), value });
  };
  return (into) => {
    out = into;
    counts.forEach(see);
    seen.forEach(pushSeen);
    counts.forEach(pushUnseen);
    out = [];
  };
}

/** @type {import('./index').Source} */
const source = Object.freeze({
  name: 'resources',
  settings: Object.freeze([]),
  metrics: METRICS,
  create: () => createResourcesSampler(),
});

module.exports = { source, createResourcesSampler, isRequestType, countTypes, ownRequestStarted, ownRequestEnded };
