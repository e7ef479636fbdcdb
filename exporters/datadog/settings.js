'use strict';

// Parsers for the Datadog settings rows in lib/options.js. Each returns undefined for a bad value,
// which makes options.js warn once (naming the variable, the value and what is accepted) and use
// the default.

// net is loaded only when a bracketed address is parsed (lib/options.js runs in the preload).
const isIP = (s) => require('net').isIP(s);

/**
 * DD_DOGSTATSD_URL as dd-trace and the Datadog client libraries read it: udp://host[:port],
 * unix:///path or unixgram:///path (both datagram sockets).
 * @param {unknown} raw
 * @returns {Readonly<{protocol: 'udp', host: string, port: number}|{protocol: 'uds', path: string}>|undefined}
 */
function parseUrl(raw) {
  const s = String(raw).trim();
  const uds = /^(?:unix|unixgram):\/\/(\/.+)$/.exec(s);
  if (uds) return Object.freeze({ protocol: 'uds', path: uds[1] });
  const udp = /^udp:\/\/(\[[0-9a-fA-F:.%]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?\/?$/.exec(s);
  if (!udp) return undefined;
  const host = udp[1].replace(/^\[(.*)\]$/, '$1');
  if (udp[1].startsWith('[') && isIP(host) !== 6) return undefined;
  const port = udp[2] === undefined ? 8125 : Number(udp[2]);
  if (port < 1 || port > 65535) return undefined;
  return Object.freeze({ protocol: 'udp', host, port });
}

/**
 * A tag value such as DD_SERVICE: any non-empty string; characters DogStatsD cannot carry in a
 * tag (| , # and whitespace) become underscores when it is sent.
 * @param {unknown} raw
 */
function parseTagValue(raw) {
  const s = String(raw).trim();
  return s === '' || s.length > 200 ? undefined : s;
}

/**
 * DD_TAGS: "key:value,key2:value2" or space separated (as dd-trace and the Agent read it), or an
 * array of tags, or an object { key: value } in start().
 * @param {unknown} raw
 * @returns {readonly string[]|undefined}
 */
function parseTags(raw) {
  let list;
  if (Array.isArray(raw)) list = raw.map(String);
  else if (raw && typeof raw === 'object') list = Object.entries(raw).map(([k, v]) => `${k}:${v}`);
  else {
    const s = String(raw);
    list = s.split(s.includes(',') ? ',' : /\s+/);
  }
  list = list.map((t) => t.trim()).filter(Boolean);
  if (list.some((t) => t.length > 200 || /[|#\n\r]/.test(t) || t.startsWith(':'))) return undefined;
  return Object.freeze(list);
}

/**
 * 'auto', or a boolean in any of the forms options.js accepts.
 * @param {unknown} raw
 * @returns {'auto'|boolean|undefined}
 */
function parseAutoBoolean(raw) {
  if (typeof raw === 'boolean') return raw;
  const s = String(raw).trim().toLowerCase();
  if (s === 'auto') return 'auto';
  if (['1', 'true', 'yes', 'on'].includes(s)) return true;
  if (['0', 'false', 'no', 'off'].includes(s)) return false;
  return undefined;
}

/**
 * An app's own hot-shots (or compatible) client, given to start({ datadog: { client } }).
 * @param {unknown} raw
 */
function parseClient(raw) {
  const ok = raw && typeof raw === 'object' && ['gauge', 'increment', 'distribution'].every((m) => typeof raw[m] === 'function');
  return ok ? raw : undefined;
}

module.exports = { parseUrl, parseTagValue, parseTags, parseAutoBoolean, parseClient };
