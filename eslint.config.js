'use strict';

// The linter run by `npm run lint`: ESLint's recommended rules, plus a few that catch real
// defects in this code base (unused names, loose equality, var, reassigned constants).

const js = require('@eslint/js');
const globals = require('globals');

module.exports = [
  {
    ignores: ['**/node_modules/**', 'test-output/**', 'docs/**'],
  },
  js.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'commonjs',
      globals: { ...globals.node },
    },
    linterOptions: {
      reportUnusedDisableDirectives: 'error',
    },
    rules: {
      'no-unused-vars': ['error', { args: 'after-used', caughtErrors: 'none', ignoreRestSiblings: true }],
      eqeqeq: ['error', 'smart'],
      'no-var': 'error',
      'prefer-const': ['error', { destructuring: 'all' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
      strict: ['error', 'global'],
    },
  },
  {
    // One concern per file and per function (issue 18): the agent's own code stays within these.
    files: ['lib/**/*.js', 'exporters/**/*.js', 'bin/**/*.js', 'register.js', 'scripts/**/*.js'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: { ...globals.node } },
  },
  {
    files: ['test/**/*.js'],
    languageOptions: { globals: { ...globals.mocha } },
    // Stand-ins for dns.lookup and libraries keep their real parameter lists (their arity is
    // part of what the transparency tests compare).
    rules: { 'no-unused-vars': ['error', { args: 'none', caughtErrors: 'none', ignoreRestSiblings: true }] },
  },
  {
    // Functions this test runs inside the page (playwright's page.evaluate).
    files: ['test/report/page.test.js'],
    languageOptions: { globals: { document: 'readonly' } },
  },
];
