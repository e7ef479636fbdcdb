'use strict';

// The agent's own troubles: a warning once per (code, key) and a count per component.
// Nothing here may throw: it runs inside someone else's process.

const { WARNINGS } = require('./warnings');

const warned = new Set();
const errorCounts = new Map();

/**
 * Emit a process warning once for a given code and key.
 * @param {import('./warnings').Warning|string} warning an entry of lib/core/warnings.js, e.g. WARNINGS.INVALID_OPTION
 * @param {string} message
 * @param {string} [key] distinguishes warnings that share a code (e.g. the variable name)
 * @returns {boolean} true if the warning was emitted now
 */
function warnOnce(warning, message, key = '') {
  const code = typeof warning === 'string' ? warning : warning.code;
  const id = `${code}\u0000${key}`;
  if (warned.has(id)) return false;
  warned.add(id);
  try {
    process.emitWarning(message, { code });
  } catch {
    // A --throw-deprecation style setup or a broken process.emitWarning must not reach the app.
  }
  return true;
}

/**
 * Count one failure of an agent component (exported as uvscope_errors_total{component}).
 * @param {string} component
 */
function countError(component) {
  errorCounts.set(component, (errorCounts.get(component) || 0) + 1);
}

/**
 * Count a failure and warn about it once per component.
 * @param {string} component
 * @param {unknown} err
 */
function reportError(component, err) {
  countError(component);
  const stack = err && /** @type {{ stack?: string }} */ (err).stack;
  const detail = stack || String(err);
  warnOnce(WARNINGS.INTERNAL_ERROR, `uvscope: ${component} failed (reported once, counted in uvscope_errors_total): ${detail}`, component);
}

/** @returns {Map<string, number>} a copy of the error counts by component */
function errorCountsSnapshot() {
  return new Map(errorCounts);
}

module.exports = { warnOnce, countError, reportError, errorCountsSnapshot };
