'use strict';

// A block's stack samples summed into blockers (lib/sources/blockers/summary.js), against samples
// the test writes: a function is one blocker whichever of its lines the samples caught.

const assert = require('node:assert/strict');
const { summarize } = require('../../lib/sources/blockers/summary');

const ROOT = '/srv/app';
const frame = (fn, line, file = `${ROOT}/import.js`) => ({ function: fn, filename: file, lineno: line });
const handler = frame('onEnd', 41);

describe('sources/blockers/summary: one blocker a function', () => {
  it('a loop sampled at two of its lines is one blocker with both lines\' time, at the line with the most', () => {
    const s = summarize([
      { frames: [frame('parseCsv', 13), handler], ms: 40 },
      { frames: [frame('parseCsv', 21), handler], ms: 35 },
      { frames: [frame('parseCsv', 21), handler], ms: 10 },
      { frames: [frame('sumColumn', 30), handler], ms: 15 },
    ], ROOT);
    assert.equal(s.capturedMs, 100);
    assert.deepEqual(s.blockers.map((b) => [b.frame.function, b.frame.line, b.share]), [['parseCsv', 21, 0.85], ['sumColumn', 30, 0.15]]);
    assert.equal(s.blockers[0].appFrame.file, 'import.js');
  });

  it('twin: anonymous functions at two lines of one file stay two blockers', () => {
    const s = summarize([
      { frames: [frame('', 50), handler], ms: 60 },
      { frames: [frame('?', 70), handler], ms: 40 },
    ], ROOT);
    assert.deepEqual(s.blockers.map((b) => [b.frame.function, b.frame.line, b.share]), [['(anonymous)', 50, 0.6], ['(anonymous)', 70, 0.4]]);
  });

  it('twin: one package function called from two app functions is two blockers, each with its caller', () => {
    const parse = frame('parse', 200, `${ROOT}/node_modules/csv-parse/dist/index.js`);
    const s = summarize([
      { frames: [parse, frame('importOrders', 9)], ms: 70 },
      { frames: [parse, frame('importUsers', 19)], ms: 30 },
    ], ROOT);
    assert.deepEqual(s.blockers.map((b) => [b.frame.package, b.appFrame.function, b.appFrame.line, b.share]), [['csv-parse', 'importOrders', 9, 0.7], ['csv-parse', 'importUsers', 19, 0.3]]);
  });
});
