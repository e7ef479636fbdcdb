'use strict';

// The mocha side of support/namespace.js: skip (or, in CI, fail) a suite that needs a private
// mount namespace where there is none.

const namespace = require('../../support/namespace');

let warned = false;

/**
 * Skips the current mocha test/suite when namespaces are unavailable; in CI
 * (process.env.CI set) throws instead, so missing coverage is never silent.
 * @param {import('mocha').Context} mochaContext `this` of a mocha hook or test
 */
function requireNamespace(mochaContext) {
  const support = namespace.namespaceSupport();
  if (support.ok) return;
  if (process.env.CI) {
    throw new Error(`A private mount namespace is required in CI (CI=${process.env.CI}) ` +
      `for the DNS tests, but it is unavailable: ${support.reason}`);
  }
  if (!warned) {
    warned = true;
    console.warn(`[uvscope tests] skipping namespace DNS tests: ${support.reason}`);
  }
  mochaContext.skip();
}

module.exports = { ...namespace, requireNamespace };
