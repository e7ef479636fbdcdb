'use strict';

// Every setting uvscope reads, assembled from the parts that declare them: the agent's own rows
// below, the endpoint's (lib/endpoint/manifest.js), every source's (lib/sources/), every
// exporter's (exporters/<name>/manifest.js), the fault seams' and libuv's (lib/core/). Each row
// (lib/core/setting.js) names its place in start(options), its environment variable(s), its
// parser (lib/settings/parsers.js, one per type), its default and what a warning says is accepted.
// Settings the app may still change in its own code after the preload (`late` rows) are read where
// they are used, with lib/core/setting.js readSetting(row).

const { setting, readSetting: readRow, fromEnvironment, environment, invalid } = require('../core/setting');
const { BOOLEAN, parseBoolean, parseInteger, parseList, parseEither, parseMatching } = require('../settings/parsers');
const { SOURCES } = require('../sources');
const { EXPORTERS } = require('../../exporters');
const endpoint = require('../endpoint/manifest');
const faults = require('../core/faults');
const libuv = require('../core/libuv');

const EXPORTER_NAMES = EXPORTERS.map((e) => e.name);

// The agent's own rows. An option given to start() wins over the environment, which wins over the
// row's default. Rows marked `late` are read from the environment each time they are used (see
// above); they are not options of start().
const AGENT = Object.freeze([
  setting('disabled', 'UVSCOPE_DISABLED', parseBoolean, BOOLEAN, { default: false, doc: 'do nothing' }),
  setting('exporters', 'UVSCOPE_EXPORTERS', parseList(EXPORTER_NAMES), `a comma-separated list of ${EXPORTER_NAMES.join(', ')}, or none`, { default: Object.freeze(['prometheus']), ts: 'ExporterName[] | string', doc: 'the exporters to run' }),
  setting('intervalMs', 'UVSCOPE_INTERVAL_MS', parseInteger(50, 3600000), 'an integer number of milliseconds from 50 to 3600000', { default: 1000, doc: 'the sampling interval' }),
  setting('reportOnExit', 'UVSCOPE_REPORT_ON_EXIT', parseEither(parseBoolean, parseMatching(/\.html?$/i)), `${BOOLEAN} (the text report on stderr), or a file path ending in .html (the page with the data embedded)`, { default: false, doc: 'the findings when the process exits' }),
]);

/** Every row, in the order of the docs. @type {readonly Readonly<import('../core/setting').Setting>[]} */
const SETTINGS = Object.freeze([
  ...AGENT,
  ...endpoint.SETTINGS,
  ...SOURCES.flatMap((s) => s.settings),
  ...EXPORTERS.flatMap((e) => e.settings),
  ...faults.SETTINGS,
  ...libuv.SETTINGS,
]);

const BY_PATH = new Map(SETTINGS.map((s) => [s.path, s]));

/** The options of start() with nothing given and nothing set: each row's default, frozen. */
const DEFAULTS = defaultsOf(SETTINGS);

/**
 * @param {readonly Readonly<import('../core/setting').Setting>[]} rows
 * @returns {Readonly<Record<string, any>>}
 */
function defaultsOf(rows) {
  /** @type {Record<string, any>} */
  const out = {};
  for (const row of rows) {
    if (row.late) continue;
    const keys = row.path.split('.');
    let cur = out;
    for (const key of keys.slice(0, -1)) cur = cur[key] || (cur[key] = {});
    cur[keys[keys.length - 1]] = row.default;
  }
  for (const value of Object.values(out)) if (value && typeof value === 'object') Object.freeze(value);
  return Object.freeze(out);
}

/**
 * Resolve the agent's options: an option given to start() wins over its environment variable,
 * which wins over the default. A bad value never throws: it warns once, naming the setting, the
 * value and what is accepted, and the default is used.
 * @param {object} [options] options given to start()
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {Readonly<object>} resolved, frozen options
 */
function resolveOptions(options, env) {
  const given = options && typeof options === 'object' ? options : {};
  if (options !== undefined && options !== null && typeof options !== 'object') {
    invalid('start(options)', options, 'an object');
  }
  const out = {};
  for (const [key, value] of Object.entries(DEFAULTS)) {
    out[key] = value && typeof value === 'object' && !Array.isArray(value) ? { ...value } : value;
  }
  for (const s of SETTINGS) {
    if (s.late) continue;
    const fromOption = get(given, s.path);
    if (fromOption !== undefined) {
      const value = s.parse(fromOption);
      if (value === undefined) invalid(`options.${s.path}`, fromOption, s.accepted, s.using || s.default);
      else set(out, s.path, value);
      continue;
    }
    const fromEnv = fromEnvironment(s, env);
    if (fromEnv !== undefined) set(out, s.path, fromEnv);
  }
  for (const value of Object.values(out)) if (value && typeof value === 'object') Object.freeze(value);
  return Object.freeze(out);
}

/**
 * One setting as the environment has it now, parsed by its row; its default when the variable is
 * unset or bad (a bad value warns once). For the CLI and tests; parts of uvscope read their own
 * rows with lib/core/setting.js readSetting(row).
 * @param {string} path a path in SETTINGS, e.g. 'threadpool.size'
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {any}
 */
function readSetting(path, env) {
  const s = BY_PATH.get(path);
  if (!s) throw new Error(`uvscope: no setting ${path}`);
  return readRow(s, env);
}

/**
 * The environment variable a setting is read from (the first, where there are several).
 * @param {string} path a path in SETTINGS
 * @returns {string}
 */
function envName(path) {
  const s = BY_PATH.get(path);
  if (!s || s.env.length === 0) throw new Error(`uvscope: setting ${path} has no environment variable`);
  return s.env[0];
}

/**
 * The environment for a process the CLI starts: this process's, with `overrides` on top.
 * @param {Record<string, string>} overrides
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {Record<string, string|undefined>}
 */
function childEnvironment(overrides, env = environment()) {
  return { ...env, ...overrides };
}

function get(obj, path) {
  let cur = obj;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = cur[key];
  }
  return cur;
}

function set(obj, path, value) {
  const keys = path.split('.');
  let cur = obj;
  for (let i = 0; i < keys.length - 1; i++) cur = cur[keys[i]];
  cur[keys[keys.length - 1]] = value;
}

module.exports = { resolveOptions, readSetting, envName, childEnvironment, DEFAULTS, SETTINGS };
