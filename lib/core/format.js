'use strict';

// How figures are written in findings and reports: one copy of each helper.

/**
 * A duration for a sentence: "1.25 s" from one second up, else whole milliseconds ("48 ms").
 * @param {number} seconds
 * @returns {string}
 */
function ms(seconds) {
  return seconds >= 1 ? `${seconds.toFixed(2)} s` : `${Math.round(seconds * 1000)} ms`;
}

/**
 * A share as a whole percentage ("35 %").
 * @param {number} x a share from 0 to 1
 * @returns {string}
 */
function pct(x) {
  return `${Math.round(x * 100)} %`;
}

/**
 * Rounded to a number of decimal digits (1 unless told).
 * @param {number} x
 * @param {number} [digits]
 * @returns {number}
 */
function round(x, digits = 1) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

module.exports = { ms, pct, round };
