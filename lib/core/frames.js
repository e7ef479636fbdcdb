'use strict';

// When two stack frames are the same function: a block's summary (sources/blockers/summary.js,
// in the watchdog's worker) groups its samples by it and the findings (findings/blockers.js) merge
// an interval's blockers by it, so a loop sampled at two of its lines is one blocker in both.

/**
 * A frame's function: its name and file, and its line when it has no name (two anonymous
 * functions of one file are told apart by where they are).
 * @param {{ function: string, file: string, line: number }} f a frame as summary.js makes it
 * @returns {string}
 */
function functionKey(f) {
  return f.function === '(anonymous)' ? `${f.function}\0${f.file}\0${f.line}` : `${f.function}\0${f.file}`;
}

module.exports = { functionKey };
