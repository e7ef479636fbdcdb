'use strict';

const asyncHooks = require('async_hooks');
const { Histogram } = require('../../core/histogram');
const { JOB_DURATION_BUCKETS } = require('./metrics');
const { reportError } = require('../../core/errors');
const { captureCaller } = require('../../core/callers');
const { subscribed, published } = require('../../core/channels');

const jobEnd = published.threadpoolJobEnd;

// Provider types of threadpool work, by kind. Taken per Node major from the binaries themselves
// (internalBinding('async_wrap').Providers, generated from NODE_ASYNC_PROVIDER_TYPES in
// src/async_wrap.h): Node 20 and 22 have CHECKPRIMEREQUEST ... VERIFYREQUEST below, 24 and 26 add
// ARGON2REQUEST. HKDF, ECDH and DH key agreement run as DERIVEBITSREQUEST. Every crypto job here
// runs on the pool when called asynchronously (CryptoJob with kCryptoJobAsync -> uv_queue_work).
const KIND_OF_TYPE = new Map([
  ['GETADDRINFOREQWRAP', 'dns'], ['GETNAMEINFOREQWRAP', 'dns'],
  ['FSREQCALLBACK', 'fs'], ['FSREQPROMISE', 'fs'], ['FILEHANDLECLOSEREQ', 'fs'],
  ['ZLIB', 'zlib'],
  ...['CHECKPRIMEREQUEST', 'PBKDF2REQUEST', 'KEYPAIRGENREQUEST', 'KEYGENREQUEST', 'KEYEXPORTREQUEST',
    'ARGON2REQUEST', 'CIPHERREQUEST', 'DERIVEBITSREQUEST', 'HASHREQUEST', 'RANDOMBYTESREQUEST',
    'RANDOMPRIMEREQUEST', 'SCRYPTREQUEST', 'SIGNREQUEST', 'VERIFYREQUEST', 'HKDFREQUEST'].map((t) => [t, 'crypto']),
]);

// Node's own provider types that are not threadpool work (handles, stream writes, timers,
// promises...). Anything neither here nor above is an addon's own name for its async work
// (napi_create_async_work's async_resource_name, or an AsyncResource's type) and counts as
// `other`, keeping that name.
const NOT_POOL = new Set(['NONE', 'DIRHANDLE', 'DNSCHANNEL', 'ELDHISTOGRAM', 'FILEHANDLE', 'BLOBREADER',
  'FSEVENTWRAP', 'HEAPSNAPSHOT', 'HTTP2SESSION', 'HTTP2STREAM', 'HTTP2PING', 'HTTP2SETTINGS',
  'HTTPINCOMINGMESSAGE', 'HTTPCLIENTREQUEST', 'LOCKS', 'DTLS_ENDPOINT', 'DTLS_SESSION', 'JSSTREAM',
  'JSUDPWRAP', 'MESSAGEPORT', 'PIPECONNECTWRAP', 'PIPESERVERWRAP', 'PIPEWRAP', 'PROCESSWRAP', 'PROMISE',
  'QUERYWRAP', 'QUIC_ENDPOINT', 'QUIC_LOGSTREAM', 'QUIC_PACKET', 'QUIC_SESSION', 'QUIC_STREAM', 'QUIC_UDP',
  'SHUTDOWNWRAP', 'SIGNALWRAP', 'STATWATCHER', 'STREAMPIPE', 'TCPCONNECTWRAP', 'TCPSERVERWRAP', 'TCPWRAP',
  'TTYWRAP', 'UDPSENDWRAP', 'UDPWRAP', 'SIGINTWATCHDOG', 'WORKER', 'WORKERCPUPROFILE', 'WORKERCPUUSAGE',
  'WORKERHEAPPROFILE', 'WORKERHEAPSNAPSHOT', 'WORKERHEAPSTATISTICS', 'WRITEWRAP', 'TLSWRAP',
  // JS-side resources
  'Timeout', 'Immediate', 'TickObject', 'Microtask', 'HTTPPARSER', 'HTTPCLIENTREQUEST',
]);

// Distinct `other` type names kept (addons); more are counted as `_other`. Longer names are cut
// to MAX_OTHER_TYPE_LENGTH characters (an addon's resource name is any string it likes).
const MAX_OTHER_TYPES = 20;
const MAX_OTHER_TYPE_LENGTH = 100;
// Stack captures per interval beyond the first job of each type (a capture costs microseconds).
const CALLER_SAMPLES_PER_INTERVAL = 50;
const MAX_CALLERS = 20;
// Routes are followed in bursts: from arming, and again at the first sample at least
// ROUTE_BURST_EVERY_MS after the last burst began, the tracer listens to http.server.request.start
// for the next ROUTE_REQUESTS_PER_BURST requests and until their responses have closed, then
// stops listening. Between bursts requests cost nothing for routes: a subscriber there alone
// (Node's publish path) costs about 2,900 instructions a request of a hello world (Node 24,
// callgrind: 66.5k -> 69.4k), most of what the armed tracer cost when it listened to every
// request. Not once a sample: each subscribe and unsubscribe changes the channel object's
// prototype, which deoptimizes the HTTP server's parserOnIncoming (V8: "wrong map"), a cost in
// CPU time that the instruction count of a steady state does not show.
const ROUTE_REQUESTS_PER_BURST = 100;
const ROUTE_BURST_EVERY_MS = 10000;
// Distinct routes kept; the rest count as _other.
const MAX_ROUTES = 50;
const MAX_ROUTES_PER_TYPE = 20;
// Lean mode (Node 24.14+ with AsyncContextFrame): resources created under a followed request,
// by async id, in two generations of at most this many each (the older is dropped when the newer
// fills up).
const ROUTE_IDS_PER_GENERATION = 4096;
// Jobs followed at once (an addon resource that never calls back stays until disarm).
const MAX_TRACKED = 100000;
const OTHER = '_other';
const THREW = Symbol('threw');

/** @param {string} type an async_hooks provider type */
function kindOf(type) {
  return KIND_OF_TYPE.get(type) || (NOT_POOL.has(type) ? null : 'other');
}

/**
 * Whether createHook honours { trackPromises: false } (Node 24.14+): older versions ignore the
 * option, so it is tested by behaviour once (a hook enabled for one promise).
 */
let trackPromisesOption;
function supportsTrackPromises() {
  if (trackPromisesOption !== undefined) return trackPromisesOption;
  let sawPromise = false;
  try {
    const probe = asyncHooks.createHook({ init(id, type) { if (type === 'PROMISE') sawPromise = true; }, trackPromises: false });
    probe.enable();
    Promise.resolve().then(() => {});
    probe.disable();
    trackPromisesOption = !sawPromise;
  } catch {
    trackPromisesOption = false;
  }
  return trackPromisesOption;
}

/**
 * Route label of an HTTP request: method and path without query string, numeric/uuid/hex id
 * segments as :id, bounded.
 * @param {string} method
 * @param {string} url
 */
function routeOf(method, url) {
  let path = String(url || '/');
  const q = path.search(/[?#]/);
  if (q !== -1) path = path.slice(0, q);
  if (path.length > 200) path = path.slice(0, 200);
  path = path.replace(/\/(\d+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,})(?=\/|$)/gi, '/:id');
  return { method: String(method || 'GET'), route: path };
}

/**
 * The threadpool tracer: an async_hooks hook that follows threadpool work from submission (init)
 * to its callback (before) by provider type, armed only when needed.
 *
 * Modes: 'on' (armed from start), 'off' (never), 'auto' (armed by consider() when the pool looks
 * saturated, for windowMs, then off for at least cooldownMs).
 *
 * Jobs submitted while disarmed are never counted: state is cleared on every disarm, and a
 * callback whose job was not seen starting is ignored, so pending never goes negative nor counts
 * jobs it did not see start.
 *
 * zlib: a ZLIB handle is one async resource reused for every write of its stream (init once,
 * `before` once per completed write). The per-job boundary is the handle's write() call (wrapped
 * on the binding's prototype while the tracer lives) to the `before` of that write's callback; a
 * handle has at most one write in flight.
 *
 * @param {object} [options]
 * @param {'auto'|'on'|'off'} [options.mode]
 * @param {number} [options.thresholdMs] auto: probe wait that arms the tracer
 * @param {number} [options.windowMs] auto: how long it stays armed
 * @param {number} [options.cooldownMs] auto: minimum time disarmed before arming again
 * @param {() => number} [options.now] epoch ms clock (injectable for tests)
 * @param {() => bigint} [options.hrtime] monotonic ns clock read in the hooks (injectable for tests)
 */
function createTracer(options = {}) {
  const mode = options.mode || 'auto';
  const thresholdSeconds = (options.thresholdMs === undefined ? 250 : options.thresholdMs) / 1000;
  const windowMs = options.windowMs === undefined ? 10000 : options.windowMs;
  const cooldownMs = options.cooldownMs === undefined ? 90000 : options.cooldownMs;
  const now = options.now || Date.now;
  const hrtime = options.hrtime || process.hrtime.bigint;
  const startedAt = now();

  const jobs = new Map(); // asyncId -> { start: bigint, series }
  const zlibInFlight = new Map(); // asyncId -> { start, series } (write in flight on that handle)
  const zlibHandles = new Map(); // asyncId -> { caller, route } of a ZLIB handle seen created
  const series = new Map(); // type -> per-type figures
  const routeLabels = new Map(); // `${method} ${route}` -> kept label
  // An addon's async work that is deleted without ever calling back (created, never queued) has
  // no `before`; only a destroy hook would see it, and a destroy hook costs on every tick object
  // and, on Node 20/22, every promise. Its resource object is held by the work until deleted, so
  // once V8 collects the resource, the job is gone: it stops counting as pending from then on.
  const gone = typeof FinalizationRegistry === 'function' ? new FinalizationRegistry(forget) : null;
  const patched = []; // [prototype, original write]
  let hook = null;
  let armed = false;
  let armedSince = null;
  let disarmedAt = -Infinity;
  let armings = 0;
  let armedMs = 0;
  let callerBudget = CALLER_SAMPLES_PER_INTERVAL;
  let own = 0; // > 0 while uvscope submits its own probes
  let failed = false;
  let closed = false;
  let otherTypes = 0;
  let dropped = 0;
  // Two modes, by what this Node offers:
  // - lean (Node 24.14+, where createHook honours trackPromises: false and AsyncLocalStorage rides
  //   on AsyncContextFrame): the armed tracer never makes Node call into JavaScript for anything
  //   but the init of a resource. With any before/after hook enabled, or once
  //   executionAsyncResource() has been called in the process, Node runs every native callback
  //   (socket reads, HTTP parser events, timers...) through a JavaScript trampoline
  //   (InternalMakeCallback in src/api/callback.cc, callbackTrampoline in
  //   lib/internal/async_hooks.js), and every callback and nextTick through the before hooks:
  //   that, not the init hook, was most of the armed tracer's cost per request (an init hook alone
  //   is within the noise of an HTTP server's CPU per request). So the `before` hook is a hook of
  //   its own, enabled only while a job is in flight (jobs or zlibInFlight not empty), and the
  //   route's second carrier is keyed by async id (executionAsyncId(): a read of a typed array)
  //   instead of a property on executionAsyncResource().
  // - classic (Node 20/22, older 24, --no-async-context-frame): one hook with init and before;
  //   any hook turns on promise hooks there, and the trampoline is on anyway.
  // Without a frame-based AsyncLocalStorage, routes follow awaits only through promise resources,
  // so promises stay tracked: --no-async-context-frame on Node 24+ is classic mode.
  const lean = mode !== 'off' && alsIsFrameBased() && supportsTrackPromises();
  // Route context, two carriers read in this order:
  // - AsyncLocalStorage where it rides on V8's continuation data (lean mode: no hook of its own).
  //   It follows awaits without promise hooks, but an event a request object emits runs in the
  //   frame its emitter captured: the HTTP parser's frame is captured when the parser is
  //   initialized for the connection (AsyncWrap::AsyncReset), before any request, and
  //   enterWith() at request start lasts only until the headers-complete callback returns. So
  //   req.on('data') and req.on('end') listeners (and all they schedule) see no store.
  // - The execution context: at request start, the connection's HTTPServerAsyncResource (the
  //   parser's resource, current in every parser callback: headers, body, message complete) gets
  //   the request, and this hook's init passes it on to every resource created under one that has
  //   it (the nextTick that emits 'end', timers...). Classic mode keeps it as a property of the
  //   resource objects (executionAsyncResource()); init sees promises there, so this alone follows
  //   awaits. Lean mode keeps it in `routeIds` by async id: entries are only made under followed
  //   requests (bursts of 100 requests), bounded by ROUTE_IDS_PER_GENERATION x 2, and one used (a
  //   resource created under it) moves to the newer generation; a resource idle while 4096 newer
  //   ones were made under followed requests (a long timer) loses its route. The maps live only
  //   while a followed request's response is open (`followed` > 0): when the last closes they are
  //   dropped and init stops looking resources up, which otherwise it did for every resource of
  //   every request (bench/instructions.js: about 4,000 instructions a request of a hello world).
  // A followed request's connection loses its route when its response closes, and every request
  // start the tracer sees overwrites it (none when the request is not followed), so a keep-alive
  // connection never lends one request's route to the next; a route
  // from an earlier arming window (a long-lived resource created under a request) is ignored.
  let als = null;
  let routeChannel = null;
  const ROUTE = Symbol('uvscope.route');
  let seenRequest = false;
  let routeIds = new Map(); // lean: async id -> request, newer generation
  let routeIdsOld = new Map(); // and the older one
  let quota = ROUTE_REQUESTS_PER_BURST; // requests still to follow in this burst
  let burstAt = -Infinity; // when the last burst began (now())
  let listening = false; // subscribed to http.server.request.start
  let beforeHook = null; // lean: the `before` hook, enabled while a job is in flight
  let beforeOn = false;
  let followed = 0; // followed requests of this arming whose response has not closed

  function seriesFor(type, kind) {
    if (kind === 'other' && type.length > MAX_OTHER_TYPE_LENGTH) type = type.slice(0, MAX_OTHER_TYPE_LENGTH);
    let s = series.get(type);
    if (!s) {
      if (kind === 'other' && type !== OTHER && otherTypes >= MAX_OTHER_TYPES) return seriesFor(OTHER, 'other');
      if (kind === 'other') otherTypes++;
      s = {
        kind, type, pending: 0, completed: 0, seconds: 0, maxSeconds: 0,
        histogram: new Histogram(JOB_DURATION_BUCKETS), callers: new Map(), routes: new Map(), seen: false,
      };
      series.set(type, s);
    }
    return s;
  }

  // The request being served, as stored at its start; its route label is worked out only when
  // threadpool work is submitted under it (most requests submit none), then kept on it.
  function currentRoute() {
    if (!seenRequest) return null;
    let request = als ? als.getStore() : undefined;
    if (!request || request.window !== armings) {
      if (lean) request = followed > 0 ? requestOfId(asyncHooks.executionAsyncId()) : undefined;
      else {
        const r = asyncHooks.executionAsyncResource();
        request = r && r[ROUTE];
      }
    }
    if (!request || request.window !== armings) return null;
    if (request.label === undefined) request.label = boundedRoute(request.method, request.url);
    return request.label;
  }

  // Lean mode's carrier by async id (see above).
  function requestOfId(id) {
    let request = routeIds.get(id);
    if (request === undefined && routeIdsOld.size > 0) {
      request = routeIdsOld.get(id);
      if (request !== undefined) {
        routeIdsOld.delete(id);
        keepRoute(id, request);
      }
    }
    return request;
  }

  function keepRoute(id, request) {
    if (routeIds.size >= ROUTE_IDS_PER_GENERATION) {
      routeIdsOld = routeIds;
      routeIds = new Map();
    }
    routeIds.set(id, request);
  }

  // Lean mode: the `before` hook is on while a job is in flight, off otherwise. Called after a
  // job is added (from init, or a zlib write) or removed; enabling it inside init is safe (Node
  // applies it once the current hooks have run, before any callback of that job can come).
  function watchCallbacks() {
    if (!beforeHook) return;
    const want = armed && (jobs.size > 0 || zlibInFlight.size > 0);
    if (want === beforeOn) return;
    if (want) beforeHook.enable();
    else beforeHook.disable();
    beforeOn = want;
  }

  function attribute(s, caller, route) {
    if (caller !== undefined) {
      let c = s.callers.get(caller);
      if (!c && s.callers.size < MAX_CALLERS) s.callers.set(caller, (c = { count: 0 }));
      if (c) c.count++;
    }
    if (route) {
      const key = `${route.method} ${route.route}`;
      let r = s.routes.get(key);
      if (!r && s.routes.size < MAX_ROUTES_PER_TYPE) s.routes.set(key, (r = { method: route.method, route: route.route, count: 0 }));
      if (r) r.count++;
    }
  }

  function sampleCaller(s) {
    if (!s.seen) {
      s.seen = true;
      return captureCaller();
    }
    if (callerBudget > 0) {
      callerBudget--;
      return captureCaller();
    }
    return undefined;
  }

  function fail(err) {
    if (failed) return;
    failed = true;
    reportError('tracer', err);
    disarm();
  }

  function init(asyncId, type, triggerAsyncId, resource) {
    try {
      if (own > 0) return;
      if (lean ? followed > 0 : seenRequest) {
        if (lean) {
          const request = requestOfId(asyncHooks.executionAsyncId());
          if (request !== undefined) keepRoute(asyncId, request);
        } else {
          const r = asyncHooks.executionAsyncResource();
          if (r && r[ROUTE] && resource && typeof resource === 'object') resource[ROUTE] = r[ROUTE];
        }
      }
      // The resources of every request and tick first (pointer compares of Node's own strings).
      if (type === 'TickObject' || type === 'Timeout' || type === 'PROMISE' || type === 'Immediate') return;
      const kind = kindOf(type);
      if (kind === null) return;
      if (kind === 'other' && resource instanceof asyncHooks.AsyncResource) return; // JS code's own resources
      if (kind === 'zlib') {
        patch(resource, 'write', zlibWrite);
        const s = seriesFor(type, kind);
        if (zlibHandles.size >= MAX_TRACKED) zlibHandles.delete(zlibHandles.keys().next().value);
        zlibHandles.set(asyncId, { caller: sampleCaller(s), route: currentRoute() });
        return;
      }
      if (jobs.size >= MAX_TRACKED) {
        dropped++;
        return;
      }
      const s = seriesFor(type, kind);
      const job = { start: hrtime(), series: s, caller: sampleCaller(s), route: currentRoute(), counted: false };
      jobs.set(asyncId, job);
      if (beforeHook) watchCallbacks();
      // A crypto job object also serves the *Sync functions (run() returns [err, result] at once
      // and no callback ever comes), so a crypto job counts once its run() has returned without
      // a result; where run() cannot be wrapped, crypto jobs are not counted.
      if (kind === 'crypto') patch(resource, 'run', cryptoRun);
      else count(job);
      if (kind === 'other' && gone && resource && typeof resource === 'object') gone.register(resource, asyncId);
    } catch (err) {
      fail(err);
    }
  }

  function count(job) {
    job.counted = true;
    job.series.pending++;
    attribute(job.series, job.caller, job.route);
  }

  function cryptoRun(handle, result) {
    try {
      const asyncId = handle.getAsyncId();
      const job = jobs.get(asyncId);
      if (!job || job.counted) return;
      if (Array.isArray(result) || result === THREW) {
        jobs.delete(asyncId);
        if (beforeHook) watchCallbacks();
      } else count(job);
    } catch (err) {
      fail(err);
    }
  }

  function before(asyncId) {
    try {
      let job = jobs.get(asyncId);
      if (job) {
        jobs.delete(asyncId);
        if (beforeHook) watchCallbacks();
        if (!job.counted) return;
      } else if ((job = zlibInFlight.get(asyncId))) {
        zlibInFlight.delete(asyncId);
        if (beforeHook) watchCallbacks();
      } else return;
      const seconds = Number(hrtime() - job.start) / 1e9;
      const s = job.series;
      s.pending--;
      s.completed++;
      s.seconds += seconds;
      if (seconds > s.maxSeconds) s.maxSeconds = seconds;
      s.histogram.observe(seconds);
      if (jobEnd.hasSubscribers) jobEnd.publish({ kind: s.kind, type: s.type, seconds });
    } catch (err) {
      fail(err);
    }
  }

  // An addon job whose resource was collected before its callback came: it never ran, or never
  // will call back. No longer pending, and no duration.
  function forget(asyncId) {
    try {
      const job = jobs.get(asyncId);
      if (!job) return;
      jobs.delete(asyncId);
      if (beforeHook) watchCallbacks();
      if (job.counted) job.series.pending--;
    } catch (err) {
      fail(err);
    }
  }

  // A zlib write submitted while armed: one job until that handle's next `before`.
  function zlibWrite(handle, result) {
    try {
      if (!armed || own > 0 || result === THREW) return;
      const asyncId = handle.getAsyncId();
      if (zlibInFlight.has(asyncId)) return;
      const s = seriesFor('ZLIB', 'zlib');
      const created = zlibHandles.get(asyncId);
      s.pending++;
      zlibInFlight.set(asyncId, { start: hrtime(), series: s });
      if (beforeHook) watchCallbacks();
      if (created) attribute(s, created.caller, created.route);
      else attribute(s, undefined, currentRoute());
    } catch (err) {
      fail(err);
    }
  }

  // Wrap a method on the binding class's prototype (once per class, undone by close()): the
  // original runs first and its result is returned untouched; `after` sees the handle and result.
  function patch(resource, method, after) {
    if (closed || !resource || typeof resource !== 'object') return;
    const proto = Object.getPrototypeOf(resource);
    if (!proto || patched.some(([p, m]) => p === proto && m === method)) return;
    const original = proto[method];
    if (typeof original !== 'function' || typeof resource.getAsyncId !== 'function') return;
    const wrapped = function () {
      let result = THREW;
      try {
        result = original.apply(this, arguments);
        return result;
      } finally {
        after(this, result);
      }
    };
    Object.defineProperty(wrapped, 'name', { value: original.name });
    proto[method] = wrapped;
    patched.push([proto, method, original, wrapped]);
  }

  function onRequestStart(message) {
    try {
      const req = message && message.request;
      if (!armed || !req) return;
      // The top-level context (no callback running) is shared by everything: never given a route.
      const id = asyncHooks.executionAsyncId();
      const r = id > 1 && !lean ? asyncHooks.executionAsyncResource() : null;
      const res = message.response;
      // Followed: one of the burst's requests, with a response that tells when it is over.
      if (quota <= 0 || !res || typeof res.on !== 'function') {
        if (lean) {
          if (followed > 0) {
            routeIds.delete(id);
            routeIdsOld.delete(id);
          }
        } else if (r && typeof r === 'object' && r[ROUTE]) r[ROUTE] = null;
        if (quota <= 0 && followed === 0) listen(false);
        return;
      }
      quota--;
      const route = { method: req.method, url: req.url, label: undefined, window: armings };
      seenRequest = true;
      if (als) als.enterWith(route);
      if (lean) {
        if (id > 1) {
          routeIdsOld.delete(id);
          keepRoute(id, route);
        }
      } else if (r && typeof r === 'object') r[ROUTE] = route;
      followed++;
      // A response emits 'close' once: on() spares once()'s wrapper (2,000 instructions a
      // followed request on Node 26, callgrind).
      res.on('close', () => followedDone(route, id, r));
    } catch (err) {
      fail(err);
    }
  }

  // A followed request's response closed: its connection no longer lends the route to what comes
  // next on it (the tracer may not see the next request start: it stops listening once the
  // burst's quota is followed and no followed response is open). Lean mode: once none is
  // open, nothing created from now on is under one, so init stops looking resources up. A
  // response of an earlier arming is ignored.
  function followedDone(route, id, r) {
    try {
      if (route.window !== armings || followed === 0) return;
      if (lean) {
        if (routeIds.get(id) === route) routeIds.delete(id);
        if (routeIdsOld.get(id) === route) routeIdsOld.delete(id);
      } else if (r && typeof r === 'object' && r[ROUTE] === route) r[ROUTE] = null;
      if (--followed > 0) return;
      if (routeIds.size > 0) routeIds = new Map();
      if (routeIdsOld.size > 0) routeIdsOld = new Map();
      if (quota <= 0) listen(false);
    } catch (err) {
      fail(err);
    }
  }

  function burst() {
    quota = ROUTE_REQUESTS_PER_BURST;
    burstAt = now();
    listen(true);
  }

  function listen(on) {
    if (on === listening || !routeChannel) return;
    if (on) routeChannel.subscribe(onRequestStart);
    else routeChannel.unsubscribe(onRequestStart);
    listening = on;
  }

  function boundedRoute(method, url) {
    const r = routeOf(method, url);
    const key = `${r.method} ${r.route}`;
    let kept = routeLabels.get(key);
    if (!kept) {
      if (routeLabels.size >= MAX_ROUTES) return { method: r.method, route: OTHER };
      kept = Object.freeze(r);
      routeLabels.set(key, kept);
    }
    return kept;
  }

  function arm() {
    if (armed || closed || failed || mode === 'off') return false;
    try {
      if (!hook) {
        if (lean) {
          hook = asyncHooks.createHook({ init, trackPromises: false });
          beforeHook = asyncHooks.createHook({ before, trackPromises: false });
          als = new asyncHooks.AsyncLocalStorage();
        } else hook = asyncHooks.createHook({ init, before });
      }
      if (!routeChannel) routeChannel = require('diagnostics_channel').channel(subscribed.httpServerRequestStart);
      burst();
      hook.enable();
    } catch (err) {
      fail(err);
      return false;
    }
    armed = true;
    armedSince = now();
    armings++;
    return true;
  }

  function disarm() {
    if (hook) {
      try {
        hook.disable();
        if (beforeHook) beforeHook.disable();
      } catch (err) {
        reportError('tracer', err);
      }
      beforeOn = false;
    }
    if (routeChannel) {
      try {
        listen(false);
      } catch {
        // unsubscribe of a subscriber that is gone cannot matter
      }
      listening = false;
      routeChannel = null;
    }
    if (als) als.disable();
    seenRequest = false;
    followed = 0;
    routeIds = new Map();
    routeIdsOld = new Map();
    if (armed) {
      armedMs += now() - armedSince;
      disarmedAt = now();
    }
    armed = false;
    armedSince = null;
    jobs.clear();
    zlibInFlight.clear();
    zlibHandles.clear();
    for (const s of series.values()) s.pending = 0;
  }

  if (mode === 'on') arm();

  return {
    mode,
    thresholdSeconds,
    get armed() {
      return armed;
    },
    /**
     * Auto mode: arm when a probe waited longer than the threshold or every pool thread was
     * busy; disarm after the window. Called once per sample.
     * @param {{ waitSeconds: number, poolFull: boolean }} signal
     */
    consider(signal) {
      if (mode !== 'auto' || closed) return;
      const t = now();
      if (armed) {
        if (t - armedSince >= windowMs) disarm();
        return;
      }
      if (t - disarmedAt < cooldownMs) return;
      if (signal.waitSeconds > thresholdSeconds || signal.poolFull) arm();
    },
    /**
     * Run fn with the tracer ignoring whatever it submits (uvscope's own probes).
     * @template T
     * @param {() => T} fn
     * @returns {T}
     */
    untraced(fn) {
      own++;
      try {
        return fn();
      } finally {
        own--;
      }
    },
    /** @returns {Map<string, number>|null} pending jobs by kind while armed, else null */
    pendingByKind() {
      if (!armed) return null;
      const out = new Map();
      for (const s of series.values()) out.set(s.kind, (out.get(s.kind) || 0) + s.pending);
      return out;
    },
    /**
     * Figures for this interval (completed, seconds, callers and routes are reset), the
     * cumulative duration histograms, and the arming state.
     */
    collect() {
      const t = now();
      const seconds = (armedMs + (armed ? t - armedSince : 0)) / 1000;
      const uptime = Math.max(0.001, (t - startedAt) / 1000);
      const list = [];
      const histograms = [];
      for (const s of series.values()) {
        if (s.histogram.count > 0) histograms.push({ kind: s.kind, type: s.type, histogram: s.histogram.snapshot() });
        if (s.pending === 0 && s.completed === 0 && s.callers.size === 0) continue;
        list.push({
          kind: s.kind, type: s.type, pending: s.pending, completed: s.completed, seconds: s.seconds, maxSeconds: s.maxSeconds,
          callers: [...s.callers].map(([caller, c]) => ({ caller, count: c.count })).sort((a, b) => b.count - a.count),
          routes: [...s.routes.values()].map((r) => ({ ...r })).sort((a, b) => b.count - a.count),
        });
        s.completed = 0;
        s.seconds = 0;
        s.maxSeconds = 0;
        s.callers.clear();
        s.routes.clear();
        s.seen = false;
      }
      callerBudget = CALLER_SAMPLES_PER_INTERVAL;
      // (A followed response that never closes keeps the tracer listening, never from a new burst.)
      if (armed && quota <= 0 && now() - burstAt >= ROUTE_BURST_EVERY_MS) burst();
      return {
        state: { mode, armed, armedSince, armings, armedSeconds: seconds, armedShare: Math.min(1, seconds / uptime), dropped },
        jobs: list.sort((a, b) => b.seconds - a.seconds || b.pending - a.pending),
        histograms,
      };
    },
    /** Disarm and restore what was wrapped. */
    close() {
      closed = true;
      disarm();
      for (const [proto, method, original, wrapped] of patched) if (proto[method] === wrapped) proto[method] = original;
      patched.length = 0;
    },
  };
}

// AsyncLocalStorage on AsyncContextFrame (Node 24+ unless --no-async-context-frame) has no hook of
// its own; the async_hooks-based one (Node 20/22, or with that flag) has _propagate.
function alsIsFrameBased() {
  return typeof asyncHooks.AsyncLocalStorage.prototype._propagate !== 'function';
}

module.exports = { createTracer, kindOf, routeOf, supportsTrackPromises };
