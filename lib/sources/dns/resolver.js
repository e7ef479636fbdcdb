'use strict';

const fs = require('fs');
const { readSetting } = require('../../core/setting');
// glibc's LOCALDOMAIN and RES_OPTIONS, read as glibc reads them (declared with the source).
const { LOCALDOMAIN, RES_OPTIONS } = require('./index');

// glibc's defaults (resolv/res_init.c, resolv.conf(5)): RES_TIMEOUT 5 s, RES_DFLRETRY 2,
// ndots 1; caps: timeout 30, attempts 5, ndots 15.
const DEFAULTS = Object.freeze({ timeout: 5, attempts: 2, ndots: 1 });
const CAPS = Object.freeze({ timeout: 30, attempts: 5, ndots: 15 });

/**
 * Parse resolv.conf as glibc reads it: nameserver lines (at most 3 are used), the last of
 * search/domain wins, options on `options` lines and in RES_OPTIONS, LOCALDOMAIN overriding search.
 * @param {string} text
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {{ nameservers: string[], search: string[], ndots: number, timeout: number, attempts: number, options: string[] }}
 */
function parseResolvConf(text, env = {}) {
  const conf = { nameservers: [], search: [], ...DEFAULTS, options: [] };
  const applyOptions = (words) => {
    for (const word of words) {
      const m = /^(ndots|timeout|attempts):(\d+)$/.exec(word);
      if (m) conf[m[1]] = Math.min(Number(m[2]), CAPS[m[1]]);
      else if (word) conf.options.push(word);
    }
  };
  for (const raw of String(text).split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    if (!line) continue;
    const [key, ...rest] = line.split(/\s+/);
    if (key === 'nameserver' && rest[0] && conf.nameservers.length < 3) conf.nameservers.push(rest[0]);
    else if (key === 'search') conf.search = rest;
    else if (key === 'domain') conf.search = rest.slice(0, 1);
    else if (key === 'options') applyOptions(rest);
  }
  if (env.LOCALDOMAIN) conf.search = env.LOCALDOMAIN.trim().split(/\s+/);
  if (env.RES_OPTIONS) applyOptions(env.RES_OPTIONS.trim().split(/\s+/));
  conf.options = [...new Set(conf.options)];
  return conf;
}

/**
 * Names /etc/hosts answers (lower-cased): these never reach a DNS server, so they are never
 * search-expanded.
 * @param {string} text
 * @returns {Set<string>}
 */
function parseHosts(text) {
  const names = new Set();
  for (const raw of String(text).split('\n')) {
    const fields = raw.replace(/#.*$/, '').trim().split(/\s+/);
    for (const name of fields.slice(1)) names.add(name.toLowerCase());
  }
  return names;
}

/**
 * The resolver configuration in force, as glibc reads it.
 * @typedef {object} ResolverConfig
 * @property {string} path the resolv.conf read
 * @property {boolean} found whether it could be read
 * @property {string[]} nameservers
 * @property {string[]} search
 * @property {number} ndots
 * @property {number} timeout seconds
 * @property {number} attempts
 * @property {string[]} options other options
 * @property {Set<string>} hosts names /etc/hosts answers
 */

/**
 * Read the resolver configuration of this process (files are tiny; read synchronously, rarely).
 * @param {{ resolvConfPath?: string, hostsPath?: string, env?: NodeJS.ProcessEnv }} [paths]
 * @returns {ResolverConfig}
 */
function readResolverConfig({ resolvConfPath = '/etc/resolv.conf', hostsPath = '/etc/hosts', env = resolverEnvironment() } = {}) {
  const read = (p) => {
    try {
      return fs.readFileSync(p, 'utf8');
    } catch {
      return null;
    }
  };
  const resolv = read(resolvConfPath);
  const hosts = read(hostsPath);
  return {
    path: resolvConfPath,
    found: resolv !== null,
    ...parseResolvConf(resolv || '', env),
    hosts: parseHosts(hosts || ''),
  };
}

// glibc reads these when the resolver initialises; the app may set them in its own code.
function resolverEnvironment() {
  return { LOCALDOMAIN: readSetting(LOCALDOMAIN), RES_OPTIONS: readSetting(RES_OPTIONS) };
}

/**
 * Whether getaddrinfo tries the search list before the name as given: fewer dots than ndots, no
 * trailing dot, a search list, and a name /etc/hosts does not answer.
 * @param {string} name
 * @param {{ search: string[], ndots: number, hosts: Set<string> }} conf
 */
function searchExpanded(name, conf) {
  if (!name || name.endsWith('.') || conf.search.length === 0 || conf.hosts.has(name)) return false;
  const dots = (name.match(/\./g) || []).length;
  return dots < conf.ndots;
}

module.exports = { parseResolvConf, parseHosts, readResolverConfig, searchExpanded, DEFAULTS };
