'use strict';

// A file descriptor a source keeps open and re-reads in place (procfs files read at every sample).

const fs = require('fs');

/**
 * Close a kept descriptor, quietly where it is already closed.
 * @param {number | null} fd
 * @returns {null} what the keeper's field becomes
 */
function closeKept(fd) {
  if (fd === null) return null;
  try {
    fs.closeSync(fd);
  } catch {
    // already closed
  }
  return null;
}

module.exports = { closeKept };
