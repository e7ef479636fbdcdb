'use strict';

// libuv's own rules, in one place for samplers, findings and exporters alike.

const { setting } = require('./setting');

/**
 * The effective libuv threadpool size for a UV_THREADPOOL_SIZE value, computed as libuv's
 * init_threads() does (src/threadpool.c): atoi(), 0 becomes 1, anything above 1024 (including
 * negative numbers, which wrap around as unsigned) becomes 1024, unset means 4.
 * @param {string|undefined} raw
 * @returns {number}
 */
function threadpoolSize(raw) {
  if (raw === undefined) return 4;
  const m = /^[\t\n\v\f\r ]*([+-]?)(\d*)/.exec(String(raw));
  const digits = m[2] || '0';
  // atoi of a huge number is undefined behaviour in C; in practice it saturates or wraps to
  // something above 1024 or negative, both of which libuv clamps to 1024.
  const n = digits.length > 10 ? Infinity : Number(digits);
  if (m[1] === '-' && n !== 0) return 1024;
  if (n === 0) return 1;
  return Math.min(n, 1024);
}

/**
 * Threads that may run getaddrinfo/getnameinfo at once: libuv runs them as slow I/O, capped at
 * (size+1)/2 threads (src/threadpool.c, slow_work_thread_threshold).
 * @param {number} size threadpool size
 */
function dnsSlots(size) {
  return Math.floor((size + 1) / 2);
}

// libuv's own variable, read as libuv reads it (never invalid) when used: the app may set it in its
// own code before its first threadpool job. Read by the threadpool and DNS samplers and DogStatsD.
const UV_THREADPOOL_SIZE = setting('threadpool.size', 'UV_THREADPOOL_SIZE', threadpoolSize, 'a number (libuv reads it with atoi and clamps it to 1..1024)',
  { late: true, default: threadpoolSize(undefined), keepEmpty: true, doc: 'libuv\'s own variable, read (never set) when first used, after the app\'s top-level code' });

/** The settings declared here (lib/agent/options.js lists them). */
const SETTINGS = Object.freeze([UV_THREADPOOL_SIZE]);

module.exports = { threadpoolSize, dnsSlots, UV_THREADPOOL_SIZE, SETTINGS };
