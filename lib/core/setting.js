'use strict';

// How one setting is declared and read. Each part of uvscope declares the rows it uses where it
// lives (a source, an exporter's manifest.js, the fault seams); lib/agent/options.js assembles
// them into the table of start(options). This is the one place that reads process.env. It lives
// in core, below everything that reads a setting (the fault seams too), and takes its parsers
// from lib/settings/parsers.js.

const { warnOnce, countError } = require('./errors');
const { WARNINGS } = require('./warnings');

/**
 * @typedef {object} Setting
 * @property {string} path where it lives in start(options) (or, for late ones, its name for readSetting())
 * @property {readonly string[]} env its environment variable(s); the first one set wins
 * @property {((raw: unknown) => unknown) & { ts?: string }} parse returns undefined for a bad
 *   value; `ts` is the TypeScript type of what start() accepts (index.d.ts)
 * @property {string} accepted what a warning says is accepted
 * @property {boolean} late read from the environment when used (readSetting), not at start()
 * @property {unknown} default used when it is unset or bad
 * @property {boolean} keepEmpty an empty variable is a value (as for UV_THREADPOOL_SIZE), not unset
 * @property {string} [using] what a warning says is used instead, when that is not the default
 * @property {string} [doc] one line for the settings tables of the docs, when `accepted` is not enough
 * @property {string} [ts] the TypeScript type of what start() accepts, when not the parser's
 */

/**
 * One setting row.
 * @param {string} path
 * @param {string|string[]} env
 * @param {(raw: unknown) => unknown} parse
 * @param {string} accepted
 * @param {{ late?: boolean, default?: unknown, keepEmpty?: boolean, using?: string, doc?: string, ts?: string }} [more]
 * @returns {Readonly<Setting>}
 */
function setting(path, env, parse, accepted, more = {}) {
  return Object.freeze({
    path, env: Object.freeze([].concat(env)), parse, accepted,
    late: Boolean(more.late), default: more.default, keepEmpty: Boolean(more.keepEmpty), using: more.using, doc: more.doc, ts: more.ts,
  });
}

/**
 * One setting as the environment has it now, parsed by its row; its default when the variable is
 * unset or bad (a bad value warns once).
 * @param {Readonly<Setting>} row
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {any}
 */
function readSetting(row, env) {
  const value = fromEnvironment(row, env);
  return value === undefined ? row.default : value;
}

/**
 * A row's value from the environment, or undefined when its variables are unset (or the value is
 * bad: then it warns once, naming the variable, the value and what is accepted).
 * @param {Readonly<Setting>} row
 * @param {NodeJS.ProcessEnv} [env] process.env by default
 * @returns {unknown}
 */
function fromEnvironment(row, env = process.env) {
  // An empty (or blank) variable is unset, except where the program that defines it says otherwise.
  const name = row.env.find((n) => env[n] !== undefined && (row.keepEmpty || String(env[n]).trim() !== ''));
  if (!name) return undefined;
  const value = row.parse(env[name]);
  if (value === undefined) invalid(name, env[name], row.accepted, row.using || row.default);
  return value;
}

/** @returns {NodeJS.ProcessEnv} this process's environment */
function environment() {
  return process.env;
}

/**
 * Warn once that a setting has a bad value (and count it in uvscope.errors{component="options"}).
 * @param {string} source the variable or `options.<path>`
 * @param {unknown} raw the value given
 * @param {string} accepted what is accepted
 * @param {unknown} [fallback] what is used instead
 */
function invalid(source, raw, accepted, fallback) {
  countError('options');
  const shown = typeof raw === 'string' ? JSON.stringify(raw) : safeString(raw);
  const using = fallback === undefined ? '' : `; using ${Array.isArray(fallback) ? fallback.join(',') : safeString(fallback)}`;
  warnOnce(WARNINGS.INVALID_OPTION, `uvscope: ${source}=${shown} is not valid: expected ${accepted}${using}`, source);
}

function safeString(v) {
  try {
    return typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
}

module.exports = { setting, readSetting, fromEnvironment, environment, invalid };
