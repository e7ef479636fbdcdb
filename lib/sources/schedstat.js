'use strict';

// The main thread's schedstat for the event-loop sampler (lib/sources/eventloop.js): its time on
// a CPU and waiting for one, read at every sample.

// Linux: nanoseconds the calling thread ran on a CPU and waited on a run queue for one
// (Documentation/scheduler/sched-stats.rst). Opened once from the main thread and re-read in
// place (pread at 0, about 4 us): a procfs file, no disk.
const THREAD_SCHEDSTAT = '/proc/thread-self/schedstat';

const { closeKept } = require('./kept-fd');

/**
 * The calling (main) thread's schedstat, opened once: read() gives [ns on a CPU, ns waiting for
 * one] or null. Null off Linux or where the kernel does not provide it.
 */
function openSchedstat() {
  if (process.platform !== 'linux') return null;
  const fs = require('fs');
  let fd;
  try {
    fd = fs.openSync(THREAD_SCHEDSTAT, 'r');
  } catch {
    return null;
  }
  const buf = Buffer.alloc(128);
  const sched = {
    read() {
      if (fd === null) return null;
      try {
        const n = fs.readSync(fd, buf, 0, buf.length, 0);
        const out = [fieldAt(buf, n, 0), fieldAt(buf, n, 1)];
        return Number.isFinite(out[0]) && Number.isFinite(out[1]) ? out : null;
      } catch {
        return null;
      }
    },
    close() {
      fd = closeKept(fd);
    },
  };
  return sched.read() ? sched : (sched.close(), null);
}

/**
 * The i-th space-separated field of buf's first n bytes as a number, as Number() reads it, read
 * from the bytes while it is all digits (the kernel's): no string per field at every sample. Fields of
 * more than 15 digits (past 2^53, exact only as Number() rounds them) go through a string.
 * @param {Buffer} buf
 * @param {number} n
 * @param {number} index
 */
function fieldAt(buf, n, index) {
  let at = 0;
  for (let f = 0; f < index; f++) {
    while (at < n && buf[at] !== 0x20) at++;
    at++;
  }
  if (at > n) return NaN; // fewer fields (split() gives undefined)
  let end = at;
  while (end < n && buf[end] !== 0x20 && buf[end] !== 0x0a) end++;
  if (end === at || end - at > 15) return Number(buf.toString('latin1', at, end));
  let value = 0;
  for (let i = at; i < end; i++) {
    const d = buf[i] - 0x30;
    if (d < 0 || d > 9) return Number(buf.toString('latin1', at, end)); // not all digits: as Number() reads it
    value = value * 10 + d;
  }
  return value;
}

module.exports = { openSchedstat, _internal: { fieldAt } };
