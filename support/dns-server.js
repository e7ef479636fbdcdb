'use strict';

const dgram = require('node:dgram');
const net = require('node:net');
const { performance } = require('node:perf_hooks');
const packet = require('dns-packet');

const RCODE = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3 };
const OPCODE_MASK = 0x7800;
// Classic DNS limit for UDP answers when the client sent no EDNS OPT record.
const DEFAULT_UDP_SIZE = 512;

/**
 * Lower-cases a DNS name and strips a trailing dot, so that configured names
 * and queried names compare equal.
 * @param {string} name
 * @returns {string}
 */
function normalizeName(name) {
  let n = String(name).toLowerCase();
  while (n.endsWith('.')) n = n.slice(0, -1);
  return n;
}

function toList(value) {
  if (value === undefined || value === null || value === false) return [];
  return Array.isArray(value) ? value : [value];
}

/**
 * Starts a scriptable authoritative-style DNS server for tests.
 *
 * @param {object} [options]
 * @param {string} [options.address='127.0.0.2'] address to bind (UDP and TCP)
 * @param {number} [options.port=53] port; glibc can only talk to port 53
 * @param {boolean} [options.tcp=true] also answer DNS over TCP on the same address/port
 * @returns {Promise<DnsServer>} resolves once both sockets are listening
 */
async function createDnsServer(options = {}) {
  const { address = '127.0.0.2', port = 53, tcp = true } = options;

  /** @type {Map<string, object>} exact names */
  const exact = new Map();
  /** @type {Map<string, object>} wildcard suffixes, keyed by '.suffix' */
  const wildcards = new Map();
  /** @type {Map<string, number>} queries seen per concrete name, for dropFirst */
  const seen = new Map();
  const timers = new Set();
  const tcpSockets = new Set();
  const queries = [];
  let closed = false;

  function findBehaviour(name) {
    const hit = exact.get(name);
    if (hit) return hit;
    // Longest matching suffix wins, like a zone with nested wildcards.
    let best = null;
    let bestLen = -1;
    for (const [suffix, behaviour] of wildcards) {
      if (name.endsWith(suffix) && name.length > suffix.length && suffix.length > bestLen) {
        best = behaviour;
        bestLen = suffix.length;
      }
    }
    return best;
  }

  function buildResponse(query, question, behaviour, maxSize) {
    const type = question.type;
    let rcode = RCODE.NOERROR;
    const answers = [];
    if (!behaviour || behaviour.nxdomain) {
      rcode = RCODE.NXDOMAIN;
    } else if (behaviour.servfail) {
      rcode = RCODE.SERVFAIL;
    } else if (question.class === 'IN' && (type === 'A' || type === 'AAAA')) {
      const ttl = behaviour.ttl === undefined ? 0 : behaviour.ttl;
      const data = type === 'A'
        ? toList(behaviour.a === undefined ? '127.0.0.1' : behaviour.a)
        : toList(behaviour.aaaa);
      for (const d of data) answers.push({ type, class: 'IN', name: question.name, ttl, data: d });
    }
    const flags = (query.flags & OPCODE_MASK)
      | (query.flags & packet.RECURSION_DESIRED)
      | packet.AUTHORITATIVE_ANSWER
      | packet.RECURSION_AVAILABLE
      | rcode;
    const response = { type: 'response', id: query.id, flags, questions: query.questions, answers };
    if (maxSize !== undefined && (behaviour && behaviour.truncate)) {
      response.flags |= packet.TRUNCATED_RESPONSE;
      response.answers = [];
      return packet.encode(response);
    }
    let buf = packet.encode(response);
    if (maxSize !== undefined && buf.length > maxSize) {
      response.flags |= packet.TRUNCATED_RESPONSE;
      response.answers = [];
      buf = packet.encode(response);
    }
    return buf;
  }

  /**
   * Decides what to do with one raw query and calls send(buf) (maybe later).
   * maxSize is set for UDP only.
   */
  function handle(msg, transport, send, maxSizeFor) {
    if (closed) return;
    let query;
    try {
      query = packet.decode(msg);
    } catch {
      return;
    }
    if (query.type !== 'query' || !query.questions || query.questions.length !== 1) return;
    const question = query.questions[0];
    if (!question || typeof question.name !== 'string') return;

    const name = normalizeName(question.name);
    const behaviour = findBehaviour(name);
    const entry = {
      name,
      type: question.type,
      at: performance.timeOrigin + performance.now(),
      dropped: false,
      transport,
      answeredAt: null,
    };
    queries.push(entry);

    let n = 0;
    if (behaviour) {
      n = (seen.get(name) || 0) + 1;
      seen.set(name, n);
      if (behaviour.drop || (behaviour.dropFirst && n <= behaviour.dropFirst)) {
        entry.dropped = true;
        return;
      }
    }

    let maxSize;
    if (maxSizeFor) maxSize = maxSizeFor(query);
    let buf;
    try {
      buf = buildResponse(query, question, behaviour, maxSize);
    } catch {
      // e.g. an invalid configured address; better a timeout in the test than a crash here
      return;
    }
    // Every slowEvery-th query of a name (counted per name) waits slowDelayMs instead: a resolver
    // with a periodic slow answer.
    const slow = Boolean(behaviour && behaviour.slowEvery > 0 && n % behaviour.slowEvery === 0);
    entry.slow = slow;
    const delay = slow ? behaviour.slowDelayMs || 0 : behaviour && behaviour.delayMs > 0 ? behaviour.delayMs : 0;
    // When the answer really left: a busy test process can send it later than delayMs.
    const answer = () => {
      entry.answeredAt = performance.timeOrigin + performance.now();
      send(buf);
    };
    if (!delay) {
      answer();
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!closed) answer();
    }, delay);
    timers.add(timer);
  }

  function udpMaxSize(query) {
    const opt = (query.additionals || []).find((r) => r && r.type === 'OPT');
    if (opt && opt.udpPayloadSize > DEFAULT_UDP_SIZE) return opt.udpPayloadSize;
    return DEFAULT_UDP_SIZE;
  }

  const udp = dgram.createSocket({
    type: net.isIPv6(address) ? 'udp6' : 'udp4',
    // Bursts of thousands of queries would overflow the default receive buffer.
    recvBufferSize: 4 * 1024 * 1024,
  });
  udp.on('message', (msg, rinfo) => {
    handle(msg, 'udp', (buf) => {
      udp.send(buf, rinfo.port, rinfo.address, () => {});
    }, udpMaxSize);
  });
  udp.on('error', () => {});

  await new Promise((resolve, reject) => {
    udp.once('error', reject);
    udp.bind(port, address, () => {
      udp.removeListener('error', reject);
      resolve();
    });
  });
  const boundPort = udp.address().port;

  let tcpServer = null;
  if (tcp) {
    tcpServer = net.createServer((socket) => {
      tcpSockets.add(socket);
      let pending = Buffer.alloc(0);
      socket.on('data', (chunk) => {
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        while (pending.length >= 2) {
          const len = pending.readUInt16BE(0);
          if (pending.length < len + 2) break;
          const msg = pending.subarray(2, len + 2);
          pending = pending.subarray(len + 2);
          handle(msg, 'tcp', (buf) => {
            if (socket.destroyed) return;
            const prefix = Buffer.alloc(2);
            prefix.writeUInt16BE(buf.length);
            socket.write(Buffer.concat([prefix, buf]));
          });
        }
      });
      socket.on('error', () => {});
      socket.on('close', () => tcpSockets.delete(socket));
    });
    tcpServer.on('error', () => {});
    try {
      await new Promise((resolve, reject) => {
        tcpServer.once('error', reject);
        tcpServer.listen({ port: boundPort, host: address, exclusive: true }, () => {
          tcpServer.removeListener('error', reject);
          resolve();
        });
      });
    } catch (err) {
      udp.close();
      throw err;
    }
  }

  const server = {
    address,
    port: boundPort,
    /** Every query received, in arrival order. */
    queries,

    /**
     * Configures how a name (or '*.suffix' for any subdomain) is answered.
     * Replaces any earlier behaviour for it and restarts its dropFirst count.
     * @param {string} name
     * @param {{a?: string|string[]|null, aaaa?: string|string[], delayMs?: number,
     *   slowEvery?: number, slowDelayMs?: number,
     *   dropFirst?: number, drop?: boolean, nxdomain?: boolean, servfail?: boolean,
     *   truncate?: boolean, ttl?: number}} [behaviour] slowEvery: every slowEvery-th query of
     *   the name is answered after slowDelayMs instead of delayMs
     */
    setName(name, behaviour = {}) {
      const n = normalizeName(name);
      const b = { ...behaviour };
      if (n.startsWith('*.')) {
        const suffix = n.slice(1);
        wildcards.set(suffix, b);
        for (const key of seen.keys()) if (key.endsWith(suffix)) seen.delete(key);
      } else {
        exact.set(n, b);
        seen.delete(n);
      }
      return server;
    },

    /**
     * Removes a configured name, so it answers NXDOMAIN again.
     * @param {string} name
     */
    deleteName(name) {
      const n = normalizeName(name);
      if (n.startsWith('*.')) wildcards.delete(n.slice(1));
      else exact.delete(n);
      return server;
    },

    /**
     * Number of logged queries for a name, optionally of one type ('A', 'AAAA').
     * @param {string} name
     * @param {string} [type]
     * @returns {number}
     */
    count(name, type) {
      const n = normalizeName(name);
      let c = 0;
      for (const q of queries) if (q.name === n && (type === undefined || q.type === type)) c++;
      return c;
    },

    /** Clears the query log and all dropFirst counters; configured names stay. */
    reset() {
      queries.length = 0;
      seen.clear();
      return server;
    },

    /**
     * Stops listening, cancels delayed answers and drops TCP connections.
     * @returns {Promise<void>}
     */
    async close() {
      if (closed) return;
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      const waits = [new Promise((resolve) => udp.close(() => resolve()))];
      if (tcpServer) {
        for (const s of tcpSockets) s.destroy();
        waits.push(new Promise((resolve) => tcpServer.close(() => resolve())));
      }
      await Promise.all(waits);
    },
  };
  return server;
}

module.exports = { createDnsServer, normalizeName };
