'use strict';

// What several tests read of the agent itself: the files it ships, and the warnings it emits.

const fs = require('fs');
const path = require('path');

const ROOT = path.join(__dirname, '..', '..');

/** The agent's own .js files (what ships), relative to the repository. */
function shippedFiles() {
  const out = ['register.js'];
  const walk = (dir) => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.js')) out.push(rel);
    }
  };
  for (const dir of ['lib', 'exporters', 'bin']) walk(dir);
  return out;
}

/** Run fn and collect the process warnings it emits (uvscope warns once per code and key). */
function collectWarnings(fn) {
  const seen = [];
  const original = process.emitWarning;
  process.emitWarning = (message, opts) => seen.push({ message: String(message), code: opts && opts.code });
  try {
    return { result: fn(), seen };
  } finally {
    process.emitWarning = original;
  }
}

module.exports = { ROOT, shippedFiles, collectWarnings };
