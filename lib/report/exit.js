'use strict';

// UVSCOPE_REPORT_ON_EXIT: the report written as the process exits, on stderr as text or to a file
// as the page with the data embedded. Loaded only at exit, with what it writes.

/**
 * Write the exit report, synchronously (it runs in process.on('exit')).
 * @param {true|string} target true: the text report on stderr; a path: the static HTML page there
 * @param {object} snapshot the last sample, taken at exit
 * @param {object[]} history the page's compact history (lib/report/page createHistory().list())
 */
function writeExitReport(target, snapshot, history) {
  if (target === true) {
    process.stderr.write(require('./text').formatReport(snapshot));
  } else {
    require('fs').writeFileSync(target, require('./page').staticReport({ snapshot: { pid: process.pid, ...snapshot }, history }));
  }
}

module.exports = { writeExitReport };
