'use strict';

// libuv's DNS slots, replayed from the starts and callbacks of lookups, to tell each lookup's wait
// for a slot from its resolving. Imports nothing.
//
// libuv runs getaddrinfo FIFO on at most (size+1)/2 threads (src/threadpool.c, slow I/O), and
// every lookup in the process passes through the DNS wrappers: the app's, counted, and the
// agent's own, which take a slot without being counted. A lookup got its slot at its call when a
// slot was free, else at the callback that freed the slot it took. The callback runs when the
// loop gets to it, after the slot really came free: a busy loop moves that lateness from the next
// lookup's resolving into its waiting (at most the event-loop delay of the moment).

// The clock of a lookup's start and end: process.hrtime.bigint(), read once (the global `process`
// is an accessor on Node 20). One BigInt a reading; process.hrtime()'s [seconds, nanoseconds]
// array cost ~110 bytes and, with the arithmetic on its two numbers, ~1,100 instructions more
// per lookup than a BigInt and its difference in V8's interpreter (Node 24).
const hrtimeBigInt = process.hrtime.bigint;

/**
 * A lookup as the model sees it: its `start` (hrtimeBigInt()) set by the caller, whether it is
 * `waiting` for a slot and how long it waited (`waitedS`) set by the model. The record is reused
 * from lookup to lookup (LookupRecords); its start is the one object a lookup leaves on it (alive
 * through a scavenge only while the lookup is in flight).
 */
class SlotLookup {
  start = 0n;
  // Seconds from its start to getting a slot: 0 when it got one at its start (or its wait is
  // unknown), else set at the callback that freed its slot (secondsBetween(start, that callback)).
  waitedS = 0;
  waiting = false;
  // Between take() and release(): a record is counted once, whatever calls back twice.
  live = false;
  // The promise wrapper's reactions for this record (wrapper.js), made at its first promise
  // lookup and kept for the record's life.
  /** @type {object | null} */
  reactions = null;
}

/**
 * The seconds between two hrtimeBigInt() readings (the difference in nanoseconds is an integer
 * below 2^53, exact as a double).
 * @param {bigint} from
 * @param {bigint} to
 * @returns {number}
 */
function secondsBetween(from, to) {
  return Number(to - from) / 1e9;
}

/**
 * Records reused from lookup to lookup: a lookup takes one at its start and gives it back when it
 * called back or was abandoned. At most `keep` idle records are kept (the most ever in flight, up
 * to that); beyond them a record is left to the GC. The idle ones are a stack in an array that
 * keeps its length (`idle` of them at its start): pop() and push() on an array going from one
 * entry to none and back made V8 drop and allocate its backing store at each lookup (~150 bytes a
 * lookup, one lookup at a time, V8's interpreter; bench/lookup-own.js --bytes).
 * @template {SlotLookup} T
 */
class LookupRecords {
  #make;
  #keep;
  /** @type {(T | null)[]} */
  #free = [];
  #idle = 0;

  /**
   * @param {() => T} make a new record
   * @param {number} [keep] idle records kept at most
   */
  constructor(make, keep = 256) {
    this.#make = make;
    this.#keep = keep;
  }

  /** @returns {T} a record, `live`, started now */
  take() {
    const n = this.#idle;
    let r;
    if (n > 0) {
      const free = this.#free;
      r = /** @type {T} */ (free[n - 1]);
      free[n - 1] = null;
      this.#idle = n - 1;
    } else {
      r = this.#make();
    }
    r.start = hrtimeBigInt();
    r.live = true;
    return r;
  }

  /** @param {T} r a record that is done with (no longer in the model's queue) */
  release(r) {
    r.live = false;
    const n = this.#idle;
    if (n < this.#keep) {
      this.#free[n] = r;
      this.#idle = n + 1;
    }
  }
}

/**
 * Lookups get a slot FIFO as slots free; a lookup's `waitedS` is set when it does. `size`,
 * `running` and `backlog` are public for the sampler's path (sampler.js), which takes and gives
 * back a slot itself while nothing is queued (submit() and done() written out: two calls less a
 * lookup, in code that runs inside the app's call and callback) and calls these methods otherwise.
 */
class SlotModel {
  #sizeOf;
  /** @type {number | null} the number of slots, null before the first lookup (submit() reads it then) */
  size = null;
  // Slots taken.
  running = 0;
  // Entries in the queue from its head on (abandoned ones too): 0 when nothing is queued.
  backlog = 0;
  /** @type {(SlotLookup | null)[]} */
  #queue = [];
  #head = 0;

  /**
   * @param {() => number} sizeOf number of slots, read at the first lookup (after the app's
   *   top-level code may have set UV_THREADPOOL_SIZE, as libuv reads it when the pool starts)
   */
  constructor(sizeOf) {
    this.#sizeOf = sizeOf;
  }

  /**
   * A lookup was started: it takes a free slot now, or queues for one.
   * @param {SlotLookup} ctx
   */
  submit(ctx) {
    let size = this.size;
    if (size === null) size = this.size = this.#sizeOf();
    const running = this.running;
    ctx.waitedS = 0;
    if (running < size) {
      this.running = running + 1;
      ctx.waiting = false;
    } else {
      ctx.waiting = true;
      this.#queue.push(ctx);
      this.backlog++;
    }
  }

  /**
   * A lookup called back: its slot goes to the next queued lookups.
   * @param {SlotLookup} ctx
   * @param {bigint} now hrtimeBigInt() at the callback
   */
  done(ctx, now) {
    if (ctx.waiting) {
      // Finished while the model had it queued: a slot came free that the model did not see
      // (a lookup from before the agent started). It ran; its wait is unknown, count none.
      ctx.waiting = false;
      ctx.waitedS = 0;
      this.abandon(ctx);
      return;
    }
    let running = this.running - 1;
    const size = /** @type {number} */ (this.size);
    let queue = this.#queue;
    let head = this.#head;
    while (running < size && head < queue.length) {
      const next = queue[head];
      // Let go of it: a taken entry kept until the queue is compacted (1024 and more) kept each
      // lookup's context alive through V8's scavenges.
      queue[head++] = null;
      if (!next) continue; // abandoned
      next.waitedS = secondsBetween(next.start, now);
      next.waiting = false;
      running++;
    }
    this.running = running;
    if (head === queue.length) {
      // Nothing queued: emptied (while backlog is 0 the sampler's path gives slots back itself).
      if (head > 0) queue.length = head = 0;
    } else if (head > 1024 && head * 2 > queue.length) {
      queue = this.#queue = queue.slice(head);
      head = 0;
    }
    this.#head = head;
    this.backlog = queue.length - head;
  }

  /**
   * A lookup that will not call back (the original threw): it leaves the queue (its entry left
   * null, still in the backlog until done() passes it) or frees its slot.
   * @param {SlotLookup} ctx
   */
  abandon(ctx) {
    const at = this.#queue.indexOf(ctx, this.#head);
    if (at !== -1) this.#queue[at] = null;
    else if (!ctx.waiting && this.running > 0) this.running--;
  }
}

module.exports = { SlotModel, SlotLookup, LookupRecords, secondsBetween, hrtimeBigInt };
