'use strict';

const dgram = require('node:dgram');

const TYPES = new Set(['c', 'g', 'd', 'h', 'ms', 's']);
const NAME = /^[A-Za-z][A-Za-z0-9_.]{0,199}$/;
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const TAG = /^[^\s|,#:][^\s|,#]{0,199}$/;

/**
 * Parse one DogStatsD metric line strictly (protocol v1.1-1.3): name:value[:value...]|type
 * [|@rate][|#tag,...][|c:container][|T<unix ts>][|e:external][|card:level]. Throws on anything
 * else: an empty or bad name, a non-numeric value, an unknown type, a rate outside (0, 1], an
 * empty or malformed tag, an unknown or repeated field.
 * @param {string} line
 * @returns {{ name: string, values: number[], value: number, type: string, rate: number, tags: string[], fields: object }}
 */
function parseLine(line) {
  const parts = line.split('|');
  if (parts.length < 2) throw new Error(`no type: ${line}`);
  const colon = parts[0].indexOf(':');
  if (colon < 1) throw new Error(`no name:value: ${line}`);
  const name = parts[0].slice(0, colon);
  if (!NAME.test(name)) throw new Error(`bad metric name "${name}": ${line}`);
  const type = parts[1];
  if (!TYPES.has(type)) throw new Error(`bad type "${type}": ${line}`);
  const raw = parts[0].slice(colon + 1).split(':');
  if (type !== 's' && !raw.every((v) => NUMBER.test(v) && Number.isFinite(Number(v)))) throw new Error(`bad value: ${line}`);
  const values = type === 's' ? raw : raw.map(Number);
  let rate = 1;
  let tags = [];
  const fields = {};
  const seen = new Set();
  for (const f of parts.slice(2)) {
    const kind = f.startsWith('@') ? '@' : f.startsWith('#') ? '#' : f.startsWith('card:') ? 'card' : f.slice(0, 2);
    if (seen.has(kind)) throw new Error(`repeated field ${kind}: ${line}`);
    seen.add(kind);
    if (kind === '@') {
      rate = Number(f.slice(1));
      if (!NUMBER.test(f.slice(1)) || !(rate > 0 && rate <= 1)) throw new Error(`bad sample rate: ${line}`);
    } else if (kind === '#') {
      tags = f.slice(1).split(',');
      if (!tags.every((t) => TAG.test(t))) throw new Error(`bad tag in ${line}`);
    } else if (kind === 'c:' || kind === 'e:') {
      if (f.length < 3) throw new Error(`empty ${kind} field: ${line}`);
      fields[kind[0]] = f.slice(2);
    } else if (f.startsWith('T') && /^T\d+$/.test(f)) {
      fields.T = Number(f.slice(1));
    } else if (kind === 'card') {
      fields.card = f.slice(5);
    } else {
      throw new Error(`unknown field "${f}": ${line}`);
    }
  }
  return { name, values, value: values[0], type, rate, tags, fields };
}

/**
 * Parse one datagram: metric lines separated by '\n' (a trailing newline is allowed).
 * @param {Buffer|string} datagram
 */
function parseDatagram(datagram) {
  const text = String(datagram);
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map(parseLine);
}

/** unix-dgram for the UDS receiver, or why not. */
function udsSupport() {
  try {
    require('unix-dgram');
    return { ok: true, reason: '' };
  } catch (err) {
    return { ok: false, reason: `unix-dgram (hot-shots' optional native dependency) cannot load on Node ${process.version}: ${err.message.split('\n')[0]}` };
  }
}

/**
 * A DogStatsD receiver for tests, on UDP (127.0.0.1) or a Unix datagram socket. Every datagram is
 * parsed strictly; a line that does not parse goes to `rejected` (with its error), never into
 * `metrics`.
 * @param {object} [options]
 * @param {string} [options.host='127.0.0.1']
 * @param {number} [options.port=0]
 * @param {string} [options.path] a Unix socket path: receive there instead of on UDP
 * @returns {Promise<DogStatsdReceiver>}
 */
async function createDogStatsdReceiver(options = {}) {
  const { host = '127.0.0.1', port = 0, path } = options;
  const datagrams = [];
  const metrics = [];
  const rejected = [];
  const waiters = new Set();

  function onDatagram(buf) {
    datagrams.push(buf.length);
    const lines = String(buf).split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    for (const line of lines) {
      try {
        metrics.push(parseLine(line));
      } catch (err) {
        rejected.push({ line, error: err.message });
      }
    }
    for (const w of [...waiters]) w();
  }

  let socket;
  let address;
  if (path) {
    const unixDgram = require('unix-dgram');
    socket = unixDgram.createSocket('unix_dgram', onDatagram);
    await new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.once('listening', resolve);
      socket.bind(path);
    });
    address = { path };
  } else {
    socket = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 * 1024 * 1024 });
    socket.on('message', onDatagram);
    await new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, host, resolve);
    });
    address = socket.address();
  }

  const receiver = {
    host: address.address,
    port: address.port,
    path: address.path,
    /** byte length of every datagram received */
    datagrams,
    /** every parsed metric line */
    metrics,
    /** lines that did not parse: { line, error } */
    rejected,
    /** metrics named `name` (optionally with all of `tags`) */
    find(name, tags = []) {
      return metrics.filter((m) => m.name === name && tags.every((t) => m.tags.includes(t)));
    },
    /**
     * Resolve once predicate() is true (checked on each datagram), reject after timeoutMs.
     * @param {() => boolean} predicate
     */
    waitFor(predicate, timeoutMs = 10000) {
      if (predicate()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate()) return;
          cleanup();
          resolve();
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`DogStatsD receiver: condition not met within ${timeoutMs} ms (${metrics.length} metrics, ${rejected.length} rejected)`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
      });
    },
    async close() {
      for (const w of [...waiters]) waiters.delete(w);
      if (path) socket.close();
      else await new Promise((resolve) => socket.close(resolve));
    },
  };
  return receiver;
}

module.exports = { createDogStatsdReceiver, parseLine, parseDatagram, udsSupport };
