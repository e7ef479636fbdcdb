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

/**
 * A lookup as the model sees it: `start` is set by the caller, `began` by the model (null while
 * the lookup waits for a slot).
 * @typedef {{ start: bigint, began: bigint | null }} SlotLookup
 */

/** Lookups get a slot FIFO as slots free; a lookup gets `began` (an hrtime bigint) when it does. */
class SlotModel {
  #sizeOf;
  /** @type {number | null} */
  #size = null;
  #running = 0;
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

  /** @returns {number | null} the number of slots, null before the first lookup */
  get size() {
    return this.#size;
  }

  /**
   * A lookup was started: it takes a free slot now, or queues for one.
   * @param {SlotLookup} ctx
   */
  submit(ctx) {
    if (this.#size === null) this.#size = this.#sizeOf();
    if (this.#running < this.#size) {
      this.#running++;
      ctx.began = ctx.start;
    } else {
      this.#queue.push(ctx);
    }
  }

  /**
   * A lookup called back: its slot goes to the next queued lookups.
   * @param {SlotLookup} ctx
   * @param {bigint} now hrtime of the callback
   */
  done(ctx, now) {
    if (ctx.began === null) {
      // Finished while the model had it queued: a slot came free that the model did not see
      // (a lookup from before the agent started). It ran; its wait is unknown, count none.
      ctx.began = ctx.start;
      this.abandon(ctx);
      return;
    }
    this.#running--;
    const queue = this.#queue;
    while (this.#running < this.#size && this.#head < queue.length) {
      const next = queue[this.#head];
      // Let go of it: a taken entry kept until the queue is compacted (1024 and more) kept each
      // lookup's context alive through V8's scavenges.
      queue[this.#head++] = null;
      if (!next) continue; // abandoned
      next.began = now;
      this.#running++;
    }
    if (this.#head > 1024 && this.#head * 2 > queue.length) {
      this.#queue = queue.slice(this.#head);
      this.#head = 0;
    }
  }

  /**
   * A lookup that will not call back (the original threw): it leaves the queue or frees its slot.
   * @param {SlotLookup} ctx
   */
  abandon(ctx) {
    const at = this.#queue.indexOf(ctx, this.#head);
    if (at !== -1) this.#queue[at] = null;
    else if (ctx.began !== null && this.#running > 0) this.#running--;
  }
}

module.exports = { SlotModel };
