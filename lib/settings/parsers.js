'use strict';

// One parser per type of setting, for the rows each part declares (lib/core/setting.js). Each
// takes the raw value (a string from the environment, or whatever was given to start()) and
// returns the parsed value, or undefined for a bad one: the reader then warns once, naming the
// setting, the value and what is accepted, and uses the default. Each parser carries `ts`, the
// TypeScript type of what start() accepts, for the options of index.d.ts (scripts/docs.js).
// This folder imports nothing: it sits below lib/core/.

// net is loaded only when a bracketed address is parsed (this runs in the preload; net costs ~2 ms).
const isIP = (s) => require('net').isIP(s);

// The words parseBoolean reads, each true word paired with its false one.
const TRUE = Object.freeze(['true', '1', 'yes', 'on']);
const FALSE = Object.freeze(['false', '0', 'no', 'off']);

/** What a boolean setting accepts, for its row's `accepted`: 'true/false, 1/0, yes/no, on/off'. */
const BOOLEAN = TRUE.map((t, i) => `${t}/${FALSE[i]}`).join(', ');

/** @param {readonly string[]} words */
const quoted = (words) => words.map((w) => `'${w}'`).join(' | ');

/**
 * A parser with its TypeScript type.
 * @template {Function} F
 * @param {F} parse
 * @param {string} ts
 * @returns {F & { ts: string }}
 */
function typed(parse, ts) {
  return Object.assign(parse, { ts });
}

/**
 * A boolean: true/false, 1/0, yes/no, on/off (any case), or a boolean given to start().
 * @param {unknown} raw
 * @returns {boolean|undefined}
 */
function parseBoolean(raw) {
  if (typeof raw === 'boolean') return raw;
  const s = String(raw).trim().toLowerCase();
  if (TRUE.includes(s)) return true;
  if (FALSE.includes(s)) return false;
  return undefined;
}
parseBoolean.ts = 'boolean';

/**
 * 'auto', or a boolean in any form parseBoolean accepts.
 * @param {unknown} raw
 * @returns {'auto'|boolean|undefined}
 */
function parseAutoBoolean(raw) {
  if (typeof raw === 'string' && raw.trim().toLowerCase() === 'auto') return 'auto';
  return parseBoolean(raw);
}
parseAutoBoolean.ts = "'auto' | boolean";

/**
 * A parser for an integer from min to max (decimal digits only: no sign, exponent or fraction).
 * @param {number} min
 * @param {number} max
 * @returns {(raw: unknown) => number|undefined}
 */
function parseInteger(min, max) {
  return typed((raw) => {
    const s = typeof raw === 'number' ? String(raw) : String(raw).trim();
    if (!/^\d+$/.test(s)) return undefined;
    const n = Number(s);
    return n >= min && n <= max ? n : undefined;
  }, 'number');
}

/**
 * A parser for one word of a fixed list, compared case-insensitively; `aliases` maps other
 * accepted words to one of the list.
 * @param {readonly string[]} words
 * @param {Record<string, string>} [aliases]
 * @returns {(raw: unknown) => string|undefined}
 */
function parseOneOf(words, aliases = {}) {
  return typed((raw) => {
    const s = String(raw).trim().toLowerCase();
    if (words.includes(s)) return s;
    return Object.hasOwn(aliases, s) ? aliases[s] : undefined;
  }, quoted(words));
}

/**
 * A parser for a comma-separated list (or an array given to start()) of words from a fixed list,
 * without repeats; `none` alone is the empty list.
 * @param {readonly string[]} words
 * @returns {(raw: unknown) => readonly string[]|undefined}
 */
function parseList(words) {
  return typed((raw) => {
    const list = (Array.isArray(raw) ? raw : String(raw).split(','))
      .map((e) => String(e).trim().toLowerCase())
      .filter(Boolean);
    if (list.length === 0) return undefined;
    if (list.length === 1 && list[0] === 'none') return Object.freeze([]);
    if (!list.every((e) => words.includes(e))) return undefined;
    return Object.freeze([...new Set(list)]);
  }, `(${quoted(words)})[] | string`);
}

/**
 * A hostname or IP address (an IPv6 address may be in brackets).
 * @param {unknown} raw
 * @returns {string|undefined}
 */
function parseHost(raw) {
  const s = String(raw).trim();
  return s !== '' && /^[A-Za-z0-9.:\-[\]%]+$/.test(s) ? s.replace(/^\[(.*)\]$/, '$1') : undefined;
}
parseHost.ts = 'string';

/**
 * A name such as DD_SERVICE: any non-empty string of at most 200 characters (characters
 * DogStatsD cannot carry in a tag, | , # and whitespace, become underscores when it is sent).
 * @param {unknown} raw
 * @returns {string|undefined}
 */
function parseName(raw) {
  const s = String(raw).trim();
  return s === '' || s.length > 200 ? undefined : s;
}
parseName.ts = 'string';

/**
 * Any string, as given (variables uvscope passes on to what reads them, e.g. glibc's
 * LOCALDOMAIN).
 * @param {unknown} raw
 * @returns {string}
 */
function parseString(raw) {
  return String(raw);
}
parseString.ts = 'string';

/**
 * DD_DOGSTATSD_URL as dd-trace and the Datadog client libraries read it: udp://host[:port],
 * unix:///path or unixgram:///path (both datagram sockets).
 * @param {unknown} raw
 * @returns {Readonly<{protocol: 'udp', host: string, port: number}|{protocol: 'uds', path: string}>|undefined}
 */
function parseDogStatsdUrl(raw) {
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
parseDogStatsdUrl.ts = 'string';

/**
 * Tags as DD_TAGS has them, "key:value,key2:value2" or space separated (as dd-trace and the
 * Datadog Agent read it), or an array of tags, or an object { key: value } given to start().
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
parseTags.ts = 'string[] | string';

/**
 * A parser for an object given to start() that has the given methods (an app's own client).
 * @param {readonly string[]} methods
 * @returns {(raw: unknown) => object|undefined}
 */
function parseObjectWith(methods) {
  return typed((raw) => (raw && typeof raw === 'object' && methods.every((m) => typeof raw[m] === 'function') ? raw : undefined), 'object');
}

/**
 * A parser for a trimmed string that matches a pattern (e.g. a file name ending in .html).
 * @param {RegExp} pattern
 * @returns {(raw: unknown) => string|undefined}
 */
function parseMatching(pattern) {
  return typed((raw) => {
    const s = String(raw).trim();
    return s !== '' && pattern.test(s) ? s : undefined;
  }, 'string');
}

/**
 * A parser that tries each parser in turn and keeps the first value one accepts.
 * @param {...(raw: unknown) => unknown} parsers
 * @returns {(raw: unknown) => unknown}
 */
function parseEither(...parsers) {
  return typed((raw) => {
    for (const parse of parsers) {
      const v = parse(raw);
      if (v !== undefined) return v;
    }
    return undefined;
  }, parsers.map((p) => /** @type {any} */ (p).ts).join(' | '));
}

/**
 * 'auto', 'on' or 'off', from 'auto' or a boolean in any form parseBoolean accepts.
 * @param {unknown} raw
 * @returns {'auto'|'on'|'off'|undefined}
 */
function parseAutoOnOff(raw) {
  const v = parseAutoBoolean(raw);
  if (v === true) return 'on';
  if (v === false) return 'off';
  return v;
}
parseAutoOnOff.ts = "'auto' | 'on' | 'off'";

module.exports = {
  BOOLEAN, parseMatching, parseEither, parseAutoOnOff,
  parseBoolean, parseAutoBoolean, parseInteger, parseOneOf, parseList, parseHost, parseName, parseString,
  parseDogStatsdUrl, parseTags, parseObjectWith,
};
