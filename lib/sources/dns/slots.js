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
// is an accessor on Node 20). One BigInt a reading: process.hrtime()'s [seconds, nanoseconds]
// array and the arithmetic on its two numbers cost more bytes and instructions per lookup. The
// reading is kept as a number of nanoseconds (nowNs()): a difference of two BigInts is one more
// BigInt per lookup, and a number in a record's field is updated in place. Exact below 2^53 ns
// (104 days since the clock's origin, the boot); beyond, a few ns, far below a lookup's µs.
const hrtimeBigInt = process.hrtime.bigint;

/** @returns {number} the monotonic clock in nanoseconds */
function nowNs() {
  return Number(hrtimeBigInt());
}

/**
 * A lookup as the model sees it: its `start` (nowNs()), whether it is `waiting` for a
 * slot and how long it waited (`waitedS`), all set by the model. The record is reused from lookup
 * to lookup (LookupRecords); its start is the one object a lookup leaves on it (alive through a
 * scavenge only while the lookup is in flight).
 */
class SlotLookup {
  start = 0;
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
 * The seconds between two nowNs() readings.
 * @param {number} from
 * @param {number} to
 * @returns {number}
 */
function secondsBetween(from, to) {
  return (to - from) / 1e9;
}

/**
 * Records reused from lookup to lookup (SlotModel#take() and release()): a lookup takes one at its
 * start and gives it back when it called back or was abandoned. At most `keep` idle records are
 * kept (the most ever in flight, up to that); beyond them a record is left to the GC. The idle ones
 * are a stack in an array that keeps its length (`idle` of them at its start): pop() and push() on
 * an array going from one entry to none and back make V8 drop and allocate its backing store at
 * each lookup (bench/lookup-own.js --bytes).
 * @template {SlotLookup} T
 */
class LookupRecords {
  /** @type {(T | null)[]} */
  free = [];
  idle = 0;

  /**
   * @param {() => T} make a new record
   * @param {number} [keep] idle records kept at most
   */
  constructor(make, keep = 256) {
    /** @type {() => T} */
    this.make = make;
    /** @type {number} */
    this.keep = keep;
  }
}

/**
 * Lookups get a slot FIFO as slots free; a lookup's `waitedS` is set when it does. A lookup's
 * record and its slot are taken in one call and given back in one (take(), release(), abandon()):
 * they run inside the app's call and callback, where each call costs a few hundred instructions
 * in V8's interpreter, and each begins with the common case (a record idle, a slot free, nothing
 * queued).
 */
class SlotModel {
  #sizeOf;
  /** @type {number | null} the number of slots, null before the first lookup (submit() reads it then) */
  size = null;
  // Slots taken.
  #running = 0;
  // Entries in the queue from its head on (abandoned ones too): 0 when nothing is queued.
  #backlog = 0;
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
   * A lookup starts: a record from `records`, started now, with a free slot or queued for one.
   * @template {SlotLookup} T
   * @param {LookupRecords<T>} records
   * @returns {T}
   */
  take(records) {
    const n = records.idle;
    let r;
    if (n > 0) {
      const free = records.free;
      r = /** @type {T} */ (free[n - 1]);
      free[n - 1] = null;
      records.idle = n - 1;
    } else {
      r = records.make();
    }
    r.start = nowNs();
    r.live = true;
    r.waitedS = 0;
    let size = this.size;
    if (size === null) size = this.size = this.#sizeOf();
    const running = this.#running;
    if (running < size) {
      this.#running = running + 1;
      r.waiting = false;
    } else {
      r.waiting = true;
      this.#queue.push(r);
      this.#backlog++;
    }
    return r;
  }

  /**
   * A lookup called back: its slot goes to the next queued lookups (or is free again), its record
   * back to `records`. Read what the record holds first: it may be taken again at once.
   * @template {SlotLookup} T
   * @param {T} r
   * @param {number} now nowNs() at the callback
   * @param {LookupRecords<T>} records
   */
  release(r, now, records) {
    if (r.waiting) {
      // Finished (or abandoned) while the model had it queued: for a callback, a slot came free
      // that the model did not see (a lookup from before the agent started); it ran, its wait is
      // unknown, count none. Its entry is left null, in the backlog until #next() passes it.
      r.waiting = false;
      r.waitedS = 0;
      const at = this.#queue.indexOf(r, this.#head);
      if (at !== -1) this.#queue[at] = null;
      else if (this.#running > 0) this.#running--;
    } else if (this.#backlog > 0) {
      this.#next(now);
    } else {
      this.#running--;
    }
    r.live = false;
    const n = records.idle;
    if (n < records.keep) {
      records.free[n] = r;
      records.idle = n + 1;
    }
  }

  /**
   * A lookup that will not call back (the original threw, inside the call that took its record):
   * released as at its own start. It leaves the queue, or frees the slot it took, which was free
   * then, so no lookup queued behind it.
   * @template {SlotLookup} T
   * @param {T} r
   * @param {LookupRecords<T>} records
   */
  abandon(r, records) {
    this.release(r, r.start, records);
  }

  // A slot came free while lookups are queued: it goes to the next ones.
  /** @param {number} now */
  #next(now) {
    let running = this.#running - 1;
    const size = /** @type {number} */ (this.size);
    let queue = this.#queue;
    let head = this.#head;
    while (running < size && head < queue.length) {
      const next = queue[head];
      // Let go of it: a taken entry kept until the queue is compacted (1024 and more) kept each
      // lookup's record alive through V8's scavenges.
      queue[head++] = null;
      if (!next) continue; // abandoned
      next.waitedS = secondsBetween(next.start, now);
      next.waiting = false;
      running++;
    }
    this.#running = running;
    if (head === queue.length) {
      if (head > 0) queue.length = head = 0;
    } else if (head > 1024 && head * 2 > queue.length) {
      queue = this.#queue = queue.slice(head);
      head = 0;
    }
    this.#head = head;
    this.#backlog = queue.length - head;
  }
}

module.exports = { SlotModel, SlotLookup, LookupRecords };
