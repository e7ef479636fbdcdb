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
 * The answer to one question, as bytes: NXDOMAIN for a name with no behaviour, SERVFAIL, or its
 * A/AAAA records; over UDP (maxSize set) truncated when asked to or when it would not fit.
 * @param {object} query the decoded query
 * @param {object} question its one question
 * @param {object|null} behaviour what setName() configured for the name
 * @param {number} [maxSize] the client's UDP payload size; undefined over TCP
 * @returns {Buffer}
 */
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

function udpMaxSize(query) {
  const opt = (query.additionals || []).find((r) => r && r.type === 'OPT');
  if (opt && opt.udpPayloadSize > DEFAULT_UDP_SIZE) return opt.udpPayloadSize;
  return DEFAULT_UDP_SIZE;
}

/** The one question of a raw DNS query, or null for anything else. */
function decodeQuestion(msg) {
  let query;
  try {
    query = packet.decode(msg);
  } catch {
    return null;
  }
  if (query.type !== 'query' || !query.questions || query.questions.length !== 1) return null;
  const question = query.questions[0];
  if (!question || typeof question.name !== 'string') return null;
  return { query, question };
}

/**
 * A UDP socket bound to address:port that hands each datagram to onQuery(msg, send, maxSizeFor).
 * @returns {Promise<import('node:dgram').Socket>}
 */
async function listenUdp(address, port, onQuery) {
  const udp = dgram.createSocket({
    type: net.isIPv6(address) ? 'udp6' : 'udp4',
    // Bursts of thousands of queries would overflow the default receive buffer.
    recvBufferSize: 4 * 1024 * 1024,
  });
  udp.on('message', (msg, rinfo) => {
    onQuery(msg, (buf) => {
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
  return udp;
}

/**
 * A TCP server on address:port that reads length-prefixed queries and hands each to
 * onQuery(msg, send); its connections are kept in `sockets` (to destroy them on close).
 * @returns {Promise<import('node:net').Server>}
 */
async function listenTcp(address, port, onQuery, sockets) {
  const tcpServer = net.createServer((socket) => {
    sockets.add(socket);
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= 2) {
        const len = pending.readUInt16BE(0);
        if (pending.length < len + 2) break;
        const msg = pending.subarray(2, len + 2);
        pending = pending.subarray(len + 2);
        onQuery(msg, (buf) => {
          if (socket.destroyed) return;
          const prefix = Buffer.alloc(2);
          prefix.writeUInt16BE(buf.length);
          socket.write(Buffer.concat([prefix, buf]));
        });
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  tcpServer.on('error', () => {});
  await new Promise((resolve, reject) => {
    tcpServer.once('error', reject);
    tcpServer.listen({ port, host: address, exclusive: true }, () => {
      tcpServer.removeListener('error', reject);
      resolve();
    });
  });
  return tcpServer;
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
function createDnsServer(options = {}) {
  const { address = '127.0.0.2', port = 53, tcp = true } = options;
  return DnsServer.listen(address, port, tcp);
}

/** The server createDnsServer() starts: names and how they are answered, and a query log. */
class DnsServer {
  /** @type {Map<string, object>} exact names */
  #exact = new Map();
  /** @type {Map<string, object>} wildcard suffixes, keyed by '.suffix' */
  #wildcards = new Map();
  /** @type {Map<string, number>} queries seen per concrete name, for dropFirst */
  #seen = new Map();
  #timers = new Set();
  #tcpSockets = new Set();
  #udp = null;
  #tcpServer = null;
  #closed = false;

  /** @param {string} address */
  constructor(address) {
    this.address = address;
    /** @type {number} the bound port */
    this.port = 0;
    /** Every query received, in arrival order. */
    this.queries = [];
  }

  /**
   * A server listening on UDP (and TCP on the same port): see createDnsServer().
   * @returns {Promise<DnsServer>}
   */
  static async listen(address, port, tcp) {
    const server = new DnsServer(address);
    const udp = await listenUdp(address, port, (msg, send, maxSizeFor) => server.#handle(msg, send, { transport: 'udp', maxSizeFor }));
    server.#udp = udp;
    server.port = udp.address().port;
    if (!tcp) return server;
    try {
      server.#tcpServer = await listenTcp(address, server.port, (msg, send) => server.#handle(msg, send, { transport: 'tcp' }), server.#tcpSockets);
    } catch (err) {
      udp.close();
      throw err;
    }
    return server;
  }

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
      this.#wildcards.set(suffix, b);
      for (const key of this.#seen.keys()) if (key.endsWith(suffix)) this.#seen.delete(key);
    } else {
      this.#exact.set(n, b);
      this.#seen.delete(n);
    }
    return this;
  }

  /**
   * Removes a configured name, so it answers NXDOMAIN again.
   * @param {string} name
   */
  deleteName(name) {
    const n = normalizeName(name);
    if (n.startsWith('*.')) this.#wildcards.delete(n.slice(1));
    else this.#exact.delete(n);
    return this;
  }

  /**
   * Number of logged queries for a name, optionally of one type ('A', 'AAAA').
   * @param {string} name
   * @param {string} [type]
   * @returns {number}
   */
  count(name, type) {
    const n = normalizeName(name);
    let c = 0;
    for (const q of this.queries) if (q.name === n && (type === undefined || q.type === type)) c++;
    return c;
  }

  /** Clears the query log and all dropFirst counters; configured names stay. */
  reset() {
    this.queries.length = 0;
    this.#seen.clear();
    return this;
  }

  /**
   * Stops listening, cancels delayed answers and drops TCP connections.
   * @returns {Promise<void>}
   */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    const udp = this.#udp;
    const tcpServer = this.#tcpServer;
    const waits = [new Promise((resolve) => udp.close(() => resolve()))];
    if (tcpServer) {
      for (const s of this.#tcpSockets) s.destroy();
      waits.push(new Promise((resolve) => tcpServer.close(() => resolve())));
    }
    await Promise.all(waits);
  }

  #findBehaviour(name) {
    const hit = this.#exact.get(name);
    if (hit) return hit;
    // Longest matching suffix wins, like a zone with nested wildcards.
    let best = null;
    let bestLen = -1;
    for (const [suffix, behaviour] of this.#wildcards) {
      if (name.endsWith(suffix) && name.length > suffix.length && suffix.length > bestLen) {
        best = behaviour;
        bestLen = suffix.length;
      }
    }
    return best;
  }

  /**
   * Decides what to do with one raw query and calls send(buf) (maybe later). maxSizeFor is set
   * for UDP only.
   */
  #handle(msg, send, { transport, maxSizeFor }) {
    if (this.#closed) return;
    const decoded = decodeQuestion(msg);
    if (!decoded) return;
    const { query, question } = decoded;
    const name = normalizeName(question.name);
    const behaviour = this.#findBehaviour(name);
    const entry = {
      name,
      type: question.type,
      at: performance.timeOrigin + performance.now(),
      dropped: false,
      transport,
      answeredAt: null,
    };
    this.queries.push(entry);

    let n = 0;
    if (behaviour) {
      n = (this.#seen.get(name) || 0) + 1;
      this.#seen.set(name, n);
      if (behaviour.drop || (behaviour.dropFirst && n <= behaviour.dropFirst)) {
        entry.dropped = true;
        return;
      }
    }
    let buf;
    try {
      buf = buildResponse(query, question, behaviour, maxSizeFor ? maxSizeFor(query) : undefined);
    } catch {
      // e.g. an invalid configured address; better a timeout in the test than a crash here
      return;
    }
    // Every slowEvery-th query of a name (counted per name) waits slowDelayMs instead: a resolver
    // with a periodic slow answer.
    const slow = Boolean(behaviour && behaviour.slowEvery > 0 && n % behaviour.slowEvery === 0);
    entry.slow = slow;
    const delay = slow ? behaviour.slowDelayMs || 0 : behaviour && behaviour.delayMs > 0 ? behaviour.delayMs : 0;
    this.#answer(entry, () => send(buf), delay);
  }

  // Sends now, or after delay ms unless closed by then; answeredAt is when the answer really
  // left (a busy test process can send it later than delayMs).
  #answer(entry, send, delay) {
    const answer = () => {
      entry.answeredAt = performance.timeOrigin + performance.now();
      send();
    };
    if (!delay) {
      answer();
      return;
    }
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (!this.#closed) answer();
    }, delay);
    this.#timers.add(timer);
  }
}

module.exports = { createDnsServer, normalizeName, DnsServer };
