'use strict';

// When two stack frames are one function (lib/core/frames.js): a block's summary in the watchdog's
// worker and the findings' merge over intervals both group blockers by it, so they must agree.

const assert = require('node:assert/strict');
const { functionKey } = require('../../lib/core/frames');
const { summarize } = require('../../lib/sources/blockers/summary');
const { intervalBlocks } = require('../../lib/findings/blockers');

const frame = (fn, file, line) => ({ function: fn, file, line, package: null });

describe('core/frames: one function, whatever line of it ran', () => {
  it('a named function at two lines is one; by name in two files, or two names in one file, two', () => {
    assert.equal(functionKey(frame('parseCsv', 'app.js', 13)), functionKey(frame('parseCsv', 'app.js', 21)));
    assert.notEqual(functionKey(frame('parseCsv', 'app.js', 13)), functionKey(frame('parseCsv', 'lib.js', 13)));
    assert.notEqual(functionKey(frame('parseCsv', 'app.js', 13)), functionKey(frame('parseTsv', 'app.js', 13)));
  });

  it('anonymous functions are told apart by their line', () => {
    assert.notEqual(functionKey(frame('(anonymous)', 'app.js', 3)), functionKey(frame('(anonymous)', 'app.js', 9)));
    assert.equal(functionKey(frame('(anonymous)', 'app.js', 3)), functionKey(frame('(anonymous)', 'app.js', 3)));
  });

  it('the summary and the findings agree: two blocks, each sampled at another line of one loop, are one blocker over the interval', () => {
    const root = '/srv/app';
    const raw = (line) => ({ frames: [{ function: 'parseCsv', filename: `${root}/import.js`, lineno: line }, { function: 'handler', filename: `${root}/server.js`, lineno: 40 }], ms: 1 });
    const blockA = summarize([raw(13), raw(13), raw(13), raw(21)], root);
    const blockB = summarize([raw(21), raw(21), raw(21), raw(13)], root);
    // each block: one blocker, shown at its line with the most time
    assert.deepEqual(blockA.blockers.map((b) => [b.frame.line, b.share]), [[13, 1]]);
    assert.deepEqual(blockB.blockers.map((b) => [b.frame.line, b.share]), [[21, 1]]);
    const blocks = intervalBlocks({
      capturing: true,
      thresholdSeconds: 0.1,
      blocks: [{ durationSeconds: 0.3, samples: 4, gcShare: 0, blockers: blockA.blockers }, { durationSeconds: 0.5, samples: 4, gcShare: 0, blockers: blockB.blockers }],
    });
    assert.equal(blocks && blocks.blockers.length, 1);
    assert.ok(blocks && Math.abs(blocks.blockers[0].seconds - 0.8) < 1e-9, `${blocks && blocks.blockers[0].seconds}`);
  });
});
