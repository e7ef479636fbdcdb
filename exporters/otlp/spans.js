'use strict';

// uvscope's context on OpenTelemetry dns.lookup spans, as exporters/datadog/spans.js does for
// dd-trace (the pairing they share: lib/core/span-pairing.js). @opentelemetry/instrumentation-dns
// (0.66, 0.67) starts its span with tracer.startSpan and never makes it active: while the lookup it
// wraps runs, the active span is still the caller's, in either load order. So uvscope sees the span
// being created through a span processor of its own, added to the registered provider's
// processors (SpanProcessor.onStart is where the SDK lets a processor add attributes), and pairs
// it with its own start event. A dns.lookup span the app made active itself is tagged too.
// The same processor hands every span's start and end to lib/core/block-victims.js, so that those
// open across a block of the event loop are given its time and its blocker when its record
// arrives; a span that ended before that (the record comes a few ms after the block) is left as
// it is.

const { injectFault } = require('../../lib/core/faults');
const { published, safeSubscriber } = require('../../lib/core/channels');
const { createLookupPairing, lookupFigures } = require('../../lib/core/span-pairing');
const { createBlockVictims, VICTIM_KEYS, roundMs } = require('../../lib/core/block-victims');
const { globalTracerProvider, activeSpan } = require('./global');

const SPAN_NAME = 'dns.lookup';
const DNS_SCOPE = '@opentelemetry/instrumentation-dns';

/** The span attributes, under uvscope.dns.* (docs/opentelemetry.md). */
const ATTRIBUTES = Object.freeze({
  inFlight: 'uvscope.dns.in_flight',
  queuedAhead: 'uvscope.dns.queued_ahead',
  slots: 'uvscope.dns.slots',
  poolSize: 'uvscope.dns.threadpool_size',
  caller: 'uvscope.dns.caller',
  blockedMs: VICTIM_KEYS.blockedMs,
  blocker: VICTIM_KEYS.blocker,
  blockerCaller: VICTIM_KEYS.caller,
  blockerRoute: VICTIM_KEYS.route,
  blockCause: VICTIM_KEYS.cause,
});

// A span's start on the block records' scale (performance.timeOrigin + performance.now()): the
// SDK's (2.x, 3.x) performance.now() at its creation, unless the app gave the start itself; else
// its startTime (Date.now()-based HrTime).
function startMs(span) {
  if (typeof span._performanceStartTime === 'number' && span._startTimeProvided !== true) {
    return performance.timeOrigin + span._performanceStartTime;
  }
  const t = span.startTime;
  return Array.isArray(t) ? t[0] * 1e3 + t[1] / 1e6 : NaN;
}

// The SDK's (2.x, 3.x) ReadableSpan.ended.
const isOpen = (span) => span.ended !== true;

function tagVictim(span, f) {
  if (typeof span.setAttribute !== 'function') return;
  span.setAttribute(ATTRIBUTES.blockedMs, roundMs(f.blockedMs));
  span.setAttribute(ATTRIBUTES.blockCause, f.cause);
  span.setAttribute(ATTRIBUTES.blocker, f.blocker);
  if (f.caller) span.setAttribute(ATTRIBUTES.blockerCaller, f.caller);
  if (f.route) span.setAttribute(ATTRIBUTES.blockerRoute, f.route);
}

// The SDK's (2.x and 3.x) list of span processors behind a provider: its MultiSpanProcessor's
// array, which every tracer of the provider calls at each span start. The SDK has no public way to
// add a processor to a provider once built (1.x had addSpanProcessor); anything else: null.
function processorsOf(provider) {
  const multi = provider && provider._activeSpanProcessor;
  const list = multi && multi._spanProcessors;
  return Array.isArray(list) ? list : null;
}

const isLookupSpan = (span) => Boolean(span) && span.name === SPAN_NAME && typeof span.setAttribute === 'function' &&
  (typeof span.isRecording !== 'function' || span.isRecording());

/**
 * Puts uvscope's context on OpenTelemetry dns.lookup spans: lookups in flight and queued ahead
 * when the lookup started, the pool's DNS slots and size, and the calling frame (a stack captured
 * only for a span). With no tracer provider registered each lookup costs two property reads.
 */
class SpanAttributer {
  #startChannel;
  #poolSize;
  #provider = null; // the provider uvscope's processor is on
  #pairing = createLookupPairing((span, inFlight) => this.#tag(span, inFlight));
  #tagged = new WeakSet();
  #count = 0;
  #onStart = safeSubscriber('exporter:otlp', (message) => this.#lookupStarted(message));
  /** uvscope's start event, handed on by whoever made this attributer while it was published. */
  lookupStarted = this.#onStart;
  #processor;
  #immediate;
  #victims = createBlockVictims({ startOf: startMs, isOpen, tag: tagVictim });
  #onBlock = safeSubscriber('exporter:otlp', (record) => {
    injectFault('channel:otlp');
    this.#victims.blocked(record);
  });

  /**
   * @param {object} options
   * @param {import('diagnostics_channel').Channel} options.startChannel uvscope:dns.lookup:start
   * @param {() => number} options.poolSize the threadpool size in effect
   */
  constructor({ startChannel, poolSize }) {
    this.#startChannel = startChannel;
    this.#poolSize = poolSize;
    const spanStarted = safeSubscriber('exporter:otlp', (span) => this.#spanStarted(span));
    this.#processor = Object.freeze({
      onStart: (span) => spanStarted(span, ''),
      onEnd: (span) => this.#victims.spanEnded(span),
      forceFlush: () => Promise.resolve(),
      shutdown: () => Promise.resolve(),
    });
    startChannel.subscribe(this.#onStart);
    published.eventloopBlock.subscribe(this.#onBlock);
    this.attach();
    // A provider registered by a later preload is found before the app's first callback, so a
    // first lookup made after that is not missed (see attach()); unref'd, it holds nothing open.
    this.#immediate = setImmediate(() => this.attach());
    this.#immediate.unref();
  }

  /** @returns {number} dns.lookup spans given uvscope's attributes */
  get tagged() {
    return this.#count;
  }

  /** @returns {{ open: number, tagged: number }} spans followed now; spans tagged as a block's victims */
  get victims() {
    return { open: this.#victims.open, tagged: this.#victims.tagged };
  }

  /**
   * Puts uvscope's span processor on the registered tracer provider, if there is one it is not
   * on yet (and takes it off a provider no longer registered). Called at start, once after the
   * preloads, at each sample and at each lookup, so a provider registered later is found. When
   * instrumentation-dns wraps dns.lookup outside uvscope, its span starts before uvscope's event:
   * the one lookup that finds a new provider is then not tagged.
   */
  attach() {
    const provider = globalTracerProvider();
    if (provider === this.#provider || (!provider && !this.#provider)) return;
    this.#detach();
    const list = processorsOf(provider);
    if (!list) return;
    list.push(this.#processor);
    this.#provider = provider;
  }

  /** Lets go of the spans ended since (and those open too long): each sample. */
  sweep() {
    this.#victims.sweep();
  }

  /** Stops: no more attributes, and the processor leaves the provider. */
  close() {
    clearImmediate(this.#immediate);
    this.#startChannel.unsubscribe(this.#onStart);
    published.eventloopBlock.unsubscribe(this.#onBlock);
    this.#detach();
  }

  #detach() {
    const list = processorsOf(this.#provider);
    const i = list ? list.indexOf(this.#processor) : -1;
    if (i !== -1) list.splice(i, 1);
    this.#provider = null;
    // The old provider's spans no longer end through uvscope's processor: forget them.
    this.#victims = createBlockVictims({ startOf: startMs, isOpen, tag: tagVictim });
  }

  #lookupStarted({ inFlight }) {
    injectFault('channel:otlp');
    this.attach();
    if (!this.#provider) return;
    const active = activeSpan();
    if (isLookupSpan(active) && !this.#tagged.has(active)) this.#tag(active, inFlight);
    this.#pairing.lookupStarted(undefined, inFlight);
  }

  #spanStarted(span) {
    this.#victims.spanStarted(span);
    if (!isLookupSpan(span) || !span.instrumentationScope || span.instrumentationScope.name !== DNS_SCOPE) return;
    injectFault('channel:otlp');
    this.#pairing.spanStarted(undefined, span);
  }

  #tag(span, inFlight) {
    if (this.#tagged.has(span)) return;
    this.#tagged.add(span);
    const figures = lookupFigures(inFlight, this.#poolSize());
    span.setAttribute(ATTRIBUTES.inFlight, figures.inFlight);
    span.setAttribute(ATTRIBUTES.queuedAhead, figures.queuedAhead);
    span.setAttribute(ATTRIBUTES.slots, figures.slots);
    span.setAttribute(ATTRIBUTES.poolSize, figures.poolSize);
    // Required here, at the first span tagged: the preload loads this file, not the stack reader.
    const caller = require('../../lib/core/callers').captureCaller();
    if (caller !== '(unknown)') span.setAttribute(ATTRIBUTES.caller, caller);
    this.#count++;
  }
}

/**
 * uvscope's context on OpenTelemetry dns.lookup spans (see SpanAttributer).
 * @param {ConstructorParameters<typeof SpanAttributer>[0]} options
 * @returns {SpanAttributer}
 */
function createSpanAttributer(options) {
  return new SpanAttributer(options);
}

module.exports = { createSpanAttributer, ATTRIBUTES };
