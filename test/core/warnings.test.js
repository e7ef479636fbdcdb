'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { WARNINGS } = require('../../lib/core/warnings');
const { SETTINGS } = require('../../lib/agent/options');
const { ROOT, shippedFiles, collectWarnings } = require('../helpers/source');

describe('warnings: every UVSCOPE_* warning code in one table', () => {
  const sources = shippedFiles().filter((f) => f !== path.join('lib', 'core', 'warnings.js'))
    .map((f) => ({ file: f, text: fs.readFileSync(path.join(ROOT, f), 'utf8') }));

  it('each entry has a UVSCOPE_ code matching its key, and a meaning', () => {
    for (const [key, w] of Object.entries(WARNINGS)) {
      assert.equal(w.code, `UVSCOPE_${key}`);
      assert.ok(w.meaning.length > 20, key);
    }
  });

  it('no code is written as a string anywhere else (setting names are not codes)', () => {
    const variables = new Set(SETTINGS.flatMap((s) => s.env));
    const literals = [];
    for (const { file, text } of sources) {
      for (const m of text.matchAll(/(['"`])(UVSCOPE_[A-Z0-9_]+)\1/g)) if (!variables.has(m[2])) literals.push(`${file}: ${m[2]}`);
    }
    assert.deepEqual(literals, []);
  });

  it('every warning used is in the table, and every entry is used', () => {
    const used = new Set();
    for (const { file, text } of sources) {
      for (const m of text.matchAll(/\bWARNINGS\.([A-Za-z0-9_]+)/g)) {
        assert.ok(Object.hasOwn(WARNINGS, m[1]), `${file} uses WARNINGS.${m[1]}, which is not in lib/core/warnings.js`);
        used.add(m[1]);
      }
      for (const m of text.matchAll(/(?<!function )\bwarnOnce\(\s*([^,\s)]+)\s*,/g)) {
        assert.match(m[1], /^WARNINGS\.[A-Z0-9_]+$/, `${file}: warnOnce(${m[1]}, ...) must name an entry of lib/core/warnings.js`);
      }
    }
    assert.deepEqual(Object.keys(WARNINGS).filter((k) => !used.has(k)), []);
  });

  it('docs/settings.md lists every code', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'docs', 'settings.md'), 'utf8');
    assert.deepEqual(Object.values(WARNINGS).map((w) => w.code).filter((c) => !readme.includes(`\`${c}\``)), []);
  });

  it('a warning is emitted once per code and key, with its code', () => {
    const { warnOnce } = require('../../lib/core/errors');
    const { seen } = collectWarnings(() => {
      assert.equal(warnOnce(WARNINGS.INVALID_OPTION, 'first', 'test-warnings-key'), true);
      assert.equal(warnOnce(WARNINGS.INVALID_OPTION, 'again', 'test-warnings-key'), false);
    });
    assert.deepEqual(seen, [{ message: 'first', code: 'UVSCOPE_INVALID_OPTION' }]);
  });
});
