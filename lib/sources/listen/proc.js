'use strict';

// Linux's figures for listening sockets, read from procfs at each sample (the listen sampler,
// sampler.js): the accept queue of a LISTEN row of /proc/net/tcp and tcp6, the network
// namespace's TcpExt counters of /proc/net/netstat, and net.core.somaxconn. Every file is the
// process's network namespace's (/proc/net is /proc/self/net).

const fs = require('fs');
const { closeKept } = require('../kept-fd');

// A LISTEN row's state (include/net/tcp_states.h TCP_LISTEN = 10).
const LISTEN = 10;
// Bytes of /proc/net/tcp read at most per sample: the kernel lists the listening sockets first
// (net/ipv4/tcp_ipv4.c tcp_seq_start walks the listening hash before the established one), so the
// read stops at the first row that is not LISTEN; this bounds it on a host whose listeners alone
// are many (150 bytes a row in tcp, 178 in tcp6: some 6,000 rows).
const MAX_BYTES = 1 << 20;
const CHUNK = 16384;
// The first read of a table asks for the bytes up to the end of the last row the previous read
// needed (rows have a fixed width; the listeners keep their order while they stay), or this many
// the first time: the kernel formats every row a read asks room for, a page (27 rows of tcp) for a
// 16 KiB read, ~660 us cold against ~190 for the header and three rows (bench/listen-cost.js).
const FIRST_READ = 1024;

/** The TcpExt counters read, in this order (a point each). */
const NETSTAT_COUNTERS = Object.freeze(['ListenOverflows', 'ListenDrops', 'TCPReqQFullDrop', 'TCPReqQFullDoCookies', 'SyncookiesSent']);

/**
 * A reader of one /proc/net/tcp-like file, opened once and re-read from its start at each call
 * (a seq_file: a read at 0 lists the sockets again).
 * @param {string} file '/proc/net/tcp' or '/proc/net/tcp6'
 */
function openListenTable(file) {
  let fd = null;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return null;
  }
  const buf = Buffer.allocUnsafe(CHUNK);
  let until = FIRST_READ; // bytes the next read asks for first
  const table = {
    /** Bytes read by the last read() (bench and tests). */
    lastBytes: 0,
    /**
     * The accept queue of each wanted LISTEN socket, by inode: sets queues.get(inode) = length.
     * Stops at the first row that is not LISTEN, once every wanted inode is found, or at MAX_BYTES.
     * @param {Map<number, number>} queues inode -> queue, filled for the inodes found (others untouched)
     * @param {number} wanted how many inodes are wanted
     * @returns {number} how many were found, or -1 when the file could not be read
     */
    read(queues, wanted) {
      if (fd === null) return -1;
      let position = 0;
      let kept = 0; // bytes of a row split by the last chunk, at buf's start
      let found = 0;
      let header = true;
      try {
        while (position < MAX_BYTES) {
          const ask = position < until ? Math.min(until - position, CHUNK - kept) : CHUNK - kept;
          const n = fs.readSync(fd, buf, kept, ask, position);
          if (n <= 0) break;
          position += n;
          const end = kept + n;
          let at = 0;
          for (let nl = buf.indexOf(10, at); nl !== -1 && nl < end; nl = buf.indexOf(10, at)) {
            if (header) header = false;
            else {
              const r = parseRow(buf, at, nl, queues);
              if (r < 0) return (table.lastBytes = position, found);
              found += r;
              if (found >= wanted) {
                until = Math.max(position - end + nl + 1, 1);
                return (table.lastBytes = position, found);
              }
            }
            at = nl + 1;
          }
          kept = end - at;
          if (kept >= CHUNK) break; // a row longer than the buffer: not the kernel's format
          buf.copy(buf, 0, at, end);
        }
      } catch {
        return -1;
      }
      table.lastBytes = position;
      return found;
    },
    close() {
      fd = closeKept(fd);
    },
  };
  return table;
}

/**
 * One row from buf[at, end): -1 when it is not LISTEN (the listeners are over), 1 when its inode
 * is one of queues' keys (its rx_queue stored), else 0. Fields: sl local rem st tx:rx tr:when
 * retrnsmt uid timeout inode (net/ipv4/tcp_ipv4.c get_tcp4_sock; rx_queue of a LISTEN row is
 * sk_ack_backlog, the connections waiting for accept()).
 */
function parseRow(buf, at, end, queues) {
  let field = 0;
  let i = at;
  let state = -1;
  let rx = -1;
  while (i < end) {
    while (i < end && buf[i] === 0x20) i++;
    if (i >= end) break;
    const start = i;
    while (i < end && buf[i] !== 0x20) i++;
    if (field === 3) {
      state = hex(buf, start, i);
      if (state !== LISTEN) return -1;
    } else if (field === 4) {
      rx = hex(buf, start + 9, i); // tx_queue:rx_queue, 8 hex digits each
    } else if (field === 9) {
      const inode = decimal(buf, start, i);
      if (!queues.has(inode)) return 0;
      queues.set(inode, rx);
      return 1;
    }
    field++;
  }
  return state === LISTEN ? 0 : -1;
}

function hex(buf, start, end) {
  let v = 0;
  for (let i = start; i < end; i++) {
    const c = buf[i];
    v = v * 16 + (c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57);
  }
  return v;
}

function decimal(buf, start, end) {
  let v = 0;
  for (let i = start; i < end; i++) v = v * 10 + (buf[i] - 0x30);
  return v;
}

/**
 * The namespace's TcpExt counters of /proc/net/netstat (NETSTAT_COUNTERS), opened once; read()
 * fills `into` in that order (NaN for one the kernel does not have) or returns false.
 */
function openNetstat(file = '/proc/net/netstat') {
  let fd = null;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return null;
  }
  const buf = Buffer.allocUnsafe(CHUNK);
  // The column of each counter in the TcpExt lines, from the header line, worked out at the first
  // read and again whenever the header's length changes (it does not while the kernel runs).
  let headerLength = -1;
  const columns = new Int32Array(NETSTAT_COUNTERS.length).fill(-1);
  // The counters the kernel has, in column order: `order` their indexes in NETSTAT_COUNTERS, so the
  // values line is walked once, up to the last column wanted (81 of 136 fields here), one
  // comparison a field (~70 us a read less, cold, in V8's interpreter).
  let order = new Int32Array(0);
  const reader = {
    /** @param {Float64Array} into */
    read(into) {
      if (fd === null) return false;
      let n;
      try {
        n = fs.readSync(fd, buf, 0, CHUNK, 0);
      } catch {
        return false;
      }
      const head = buf.indexOf('TcpExt:', 0, 'latin1');
      const headEnd = head === -1 ? -1 : buf.indexOf(10, head);
      if (head === -1 || headEnd === -1 || headEnd >= n) return false;
      if (headEnd - head !== headerLength) {
        headerLength = headEnd - head;
        const names = buf.toString('latin1', head, headEnd).split(' ');
        for (let k = 0; k < NETSTAT_COUNTERS.length; k++) columns[k] = names.indexOf(NETSTAT_COUNTERS[k]);
        order = Int32Array.from(NETSTAT_COUNTERS.keys()).filter((k) => columns[k] > 0).sort((a, b) => columns[a] - columns[b]);
      }
      // the values line follows the header
      const start = headEnd + 1;
      const end = buf.indexOf(10, start);
      if (end === -1 || end > n) return false;
      into.fill(NaN);
      let field = 0;
      let next = 0;
      let i = start;
      while (i < end && next < order.length) {
        const s = i;
        while (i < end && buf[i] !== 0x20) i++;
        if (field === columns[order[next]]) into[order[next++]] = decimal(buf, s, i);
        field++;
        i++;
      }
      return true;
    },
    close() {
      fd = closeKept(fd);
    },
  };
  return reader;
}

/** net.core.somaxconn of the process's namespace (the cap on any listen() backlog), or null. */
function readSomaxconn(file = '/proc/sys/net/core/somaxconn') {
  try {
    const v = Number(fs.readFileSync(file, 'latin1').trim());
    return Number.isInteger(v) && v > 0 ? v : null;
  } catch {
    return null;
  }
}

/**
 * The inode of the socket on file descriptor fd ('socket:[123]' in /proc/self/fd), or null.
 * @param {number} fd
 */
function socketInode(fd) {
  try {
    const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/self/fd/${fd}`));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** The process's network namespace ('net:[4026531840]') and whether pid 1 shares it, or null. */
function netNamespace() {
  try {
    const own = fs.readlinkSync('/proc/self/ns/net');
    let init = null;
    try {
      init = fs.readlinkSync('/proc/1/ns/net');
    } catch {
      // not allowed to read pid 1's: unknown
    }
    return { id: own, sharedWithPid1: init === null ? null : init === own };
  } catch {
    return null;
  }
}

module.exports = { openListenTable, openNetstat, readSomaxconn, socketInode, netNamespace, NETSTAT_COUNTERS, _internal: { parseRow } };
