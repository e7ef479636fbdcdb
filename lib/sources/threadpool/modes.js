'use strict';

// The tracer's two modes, chosen once by what this Node offers:
// - lean (Node 24.14+: createHook honours trackPromises: false, AsyncLocalStorage rides on
//   AsyncContextFrame): Node calls into JavaScript only for the init of a resource. A `before` hook,
//   or any executionAsyncResource() call, makes Node run every native callback through a JavaScript
//   trampoline (InternalMakeCallback, src/api/callback.cc), so `before` is a hook of its own,
//   enabled only while a job is in flight, and a request's route is kept by async id.
// - classic (Node 20/22, older 24, --no-async-context-frame): one hook with init and before (the
//   trampoline is on anyway), and the route is a property of the resource objects. Without a
//   frame-based AsyncLocalStorage, routes follow awaits only through promise resources, so
//   promises stay tracked.
// Each mode's route carrier has the same methods; lib/sources/threadpool/routes.js uses them.

const asyncHooks = require('async_hooks');

// Lean mode: resources created under a followed request, by async id, in two generations of at
// most this many each (the older is dropped when the newer fills up).
const ROUTE_IDS_PER_GENERATION = 4096;

/** @type {boolean|undefined} */
let trackPromisesOption;

/**
 * Whether createHook honours { trackPromises: false } (Node 24.14+): older versions ignore the
 * option, so it is tested by behaviour once (a hook enabled for one promise).
 * @returns {boolean}
 */
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

// AsyncLocalStorage on AsyncContextFrame (Node 24+ unless --no-async-context-frame) has no hook of
// its own; the async_hooks-based one (Node 20/22, or with that flag) has _propagate.
function alsIsFrameBased() {
  return typeof /** @type {any} */ (asyncHooks.AsyncLocalStorage.prototype)._propagate !== 'function';
}

/**
 * Whether this Node runs the tracer in lean mode.
 * @returns {boolean}
 */
function leanModeAvailable() {
  return alsIsFrameBased() && supportsTrackPromises();
}

/**
 * Lean mode's `before` hook: enabled while a job is in flight, off otherwise. Enabling it inside
 * init is safe (Node applies it once the current hooks have run, before any callback can come).
 */
class CallbackSwitch {
  #hook;
  #on = false;
  #armed = false;

  /** @param {asyncHooks.AsyncHook} hook */
  constructor(hook) {
    this.#hook = hook;
  }

  /** The tracer is armed: update() may enable the hook from now on. */
  arm() {
    this.#armed = true;
  }

  /** @param {boolean} inFlight whether a job is in flight */
  update(inFlight) {
    const want = this.#armed && inFlight;
    if (want === this.#on) return;
    if (want) this.#hook.enable();
    else this.#hook.disable();
    this.#on = want;
  }

  /** Disable the hook (throws what disable() throws). */
  disable() {
    this.#hook.disable();
  }

  /** The tracer is disarmed. */
  disarm() {
    this.#armed = false;
    this.#on = false;
  }
}

/**
 * Lean mode's route carriers: AsyncLocalStorage first (it follows awaits without promise hooks),
 * then a map by async id, filled by init under a followed request. An event a request object
 * emits runs in the frame its emitter captured (the HTTP parser's, from before any request), so
 * req.on('data'/'end') listeners see no store: the async id of the connection's parser resource,
 * current in every parser callback, carries the request to what is created under it.
 */
class LeanCarrier {
  #als = new asyncHooks.AsyncLocalStorage();
  #ids = new Map(); // async id -> request, newer generation
  #old = new Map(); // and the older one

  /** @returns {FollowedRequest|undefined} the request in AsyncLocalStorage */
  store() {
    return this.#als.getStore();
  }

  /** @returns {FollowedRequest|undefined} the request of the current execution context */
  find() {
    return this.#byId(asyncHooks.executionAsyncId());
  }

  /** init of a resource while a followed request is open: it inherits the current request. */
  inherit(asyncId) {
    const request = this.#byId(asyncHooks.executionAsyncId());
    if (request !== undefined) this.#keep(asyncId, request);
  }

  /** @returns {number} where a request starts (its parser resource's async id) */
  here() {
    return asyncHooks.executionAsyncId();
  }

  /** A followed request starts at `id`. */
  set(id, request) {
    this.#als.enterWith(request);
    if (id > 1) {
      this.#old.delete(id);
      this.#keep(id, request);
    }
  }

  /** A request not followed starts at `id`: it must not inherit the last one's route. */
  clear(id, anyFollowed) {
    if (anyFollowed) {
      this.#ids.delete(id);
      this.#old.delete(id);
    }
  }

  /** A followed request's response closed. */
  release(id, request) {
    if (this.#ids.get(id) === request) this.#ids.delete(id);
    if (this.#old.get(id) === request) this.#old.delete(id);
  }

  /** No followed request is open: nothing created from now on is under one. */
  reset() {
    if (this.#ids.size > 0) this.#ids = new Map();
    if (this.#old.size > 0) this.#old = new Map();
  }

  disable() {
    this.#als.disable();
  }

  // A resource found in the older generation moves to the newer: one idle while 4096 newer ones
  // were made under followed requests (a long timer) loses its route.
  #byId(id) {
    let request = this.#ids.get(id);
    if (request === undefined && this.#old.size > 0) {
      request = this.#old.get(id);
      if (request !== undefined) {
        this.#old.delete(id);
        this.#keep(id, request);
      }
    }
    return request;
  }

  #keep(id, request) {
    if (this.#ids.size >= ROUTE_IDS_PER_GENERATION) {
      this.#old = this.#ids;
      this.#ids = new Map();
    }
    this.#ids.set(id, request);
  }
}

/**
 * Classic mode's route carrier: a property on the resource objects. At request start the
 * connection's parser resource (current in every parser callback) gets the request, and init
 * passes it on to every resource created under one that has it, promises included.
 */
class ClassicCarrier {
  #key = Symbol('uvscope.route');

  /** @returns {undefined} */
  store() {
    return undefined;
  }

  find() {
    const r = asyncHooks.executionAsyncResource();
    return r && r[this.#key];
  }

  inherit(asyncId, resource) {
    const r = asyncHooks.executionAsyncResource();
    if (r && r[this.#key] && resource && typeof resource === 'object') resource[this.#key] = r[this.#key];
  }

  /** @returns {object|null} the resource current at request start (none at the top level) */
  here() {
    return asyncHooks.executionAsyncId() > 1 ? asyncHooks.executionAsyncResource() : null;
  }

  set(r, request) {
    if (r && typeof r === 'object') r[this.#key] = request;
  }

  clear(r) {
    if (r && typeof r === 'object' && r[this.#key]) r[this.#key] = null;
  }

  release(r, request) {
    if (r && typeof r === 'object' && r[this.#key] === request) r[this.#key] = null;
  }

  reset() {}

  disable() {}
}

/**
 * The hooks and route carrier of a mode, created at the first arming.
 * @param {boolean} lean
 * @param {(asyncId: number, type: string, triggerAsyncId: number, resource: object) => void} init
 * @param {(asyncId: number) => void} before
 * @returns {{ hook: asyncHooks.AsyncHook, callbacks: CallbackSwitch|null, carrier: LeanCarrier|ClassicCarrier }}
 */
function createMode(lean, init, before) {
  if (!lean) return { hook: asyncHooks.createHook({ init, before }), callbacks: null, carrier: new ClassicCarrier() };
  const hook = asyncHooks.createHook({ init, trackPromises: false });
  const callbacks = new CallbackSwitch(asyncHooks.createHook({ before, trackPromises: false }));
  return { hook, callbacks, carrier: new LeanCarrier() };
}

/** @typedef {LeanCarrier|ClassicCarrier} Carrier */
/** @typedef {CallbackSwitch} Callbacks */
/** @typedef {{ method: string, url: string, label: ({ method: string, route: string }|undefined), window: number }} FollowedRequest */

module.exports = { createMode, leanModeAvailable, supportsTrackPromises };
