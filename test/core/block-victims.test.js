'use strict';

// The victims' figures, decided once for every tracer (lib/core/block-victims.js), against spans
// and block records whose times the test sets: the block time inside each span, summed over
// blocks; the costliest block's blocker; nothing for a span that started after the block, ended
// before its record, or was forgotten (the cap, the age); no span kept once ended and swept.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { createBlockVictims, VICTIM_KEYS } = require('../../lib/core/block-victims');

const T = performance.timeOrigin + performance.now();
const block = (start, end, name, extra = {}) => ({ start: T + start, end: T + end, seconds: (end - start) / 1e3, cause: 'code', blocker: name ? { name } : null, route: null, ...extra });

function harness(options = {}) {
  const tags = new Map();
  const victims = createBlockVictims({
    startOf: (span) => T + span.start,
    isOpen: (span) => !span.ended,
    tag: (span, f) => tags.set(span.id, { ...f }),
    ...options,
  });
  const span = (id, start) => {
    const s = { id, start, ended: false };
    victims.spanStarted(s);
    return s;
  };
  return { victims, tags, span };
}

describe('core/block-victims', () => {
  it('gives each span open across a block the block time inside it, and its blocker', () => {
    const { victims, tags, span } = harness();
    span('before', 0); // open across the whole block
    span('inside', 150); // started inside the blocking callback, 50 ms before its end
    span('ended', 10).ended = true; // ended before the record arrived
    assert.equal(victims.blocked(block(100, 200, 'parseCsv', { blocker: { name: 'parseCsv', caller: 'src/import.js:9' }, route: 'POST /import' })), 2);
    span('after', 201); // started after the block, before another record
    assert.deepEqual(tags.get('before'), { blockedMs: 100, worstMs: 100, blocker: 'parseCsv', caller: 'src/import.js:9', route: 'POST /import', cause: 'code' });
    assert.equal(tags.get('inside').blockedMs, 50);
    assert.equal(tags.has('ended'), false);
    assert.equal(tags.has('after'), false);
    assert.equal(victims.tagged, 2);
  });

  it('sums several blocks and names the costliest one inside the span; a collection without a name is gc', () => {
    const { victims, tags, span } = harness();
    span('long', 0);
    victims.blocked(block(10, 40, 'small', { blocker: { name: 'small', caller: 'src/a.js:1' }, route: 'GET /a' }));
    victims.blocked(block(100, 180, null, { cause: 'gc' }));
    victims.blocked(block(200, 250, 'medium'));
    // the caller and route written for the first block are overwritten, not left beside another blocker
    assert.deepEqual(tags.get('long'), { blockedMs: 30 + 80 + 50, worstMs: 80, blocker: 'gc', caller: '(unknown)', route: '(unknown)', cause: 'gc' });
    span('other', 300);
    victims.blocked(block(310, 320, null));
    assert.deepEqual(tags.get('other'), { blockedMs: 10, worstMs: 10, blocker: '(unknown)', caller: null, route: null, cause: 'code' });
  });

  it('twin: a span started after the block ended, or within the tracers\' clock of its end, gets nothing', () => {
    const { victims, tags, span } = harness();
    span('at-end', 99.5);
    span('after', 100);
    assert.equal(victims.blocked(block(0, 100, 'spin')), 0);
    assert.equal(tags.size, 0);
  });

  it('never keeps a span the app does not end: past the cap the oldest go, and any open over 5 minutes', () => {
    const { victims, tags, span } = harness({ cap: 4 });
    for (const id of ['a', 'b', 'c', 'd', 'e']) span(id, 0); // the ring full: half of it freed, the oldest forgotten
    assert.equal(victims.open, 3);
    victims.blocked(block(10, 20, 'spin'));
    assert.deepEqual([...tags.keys()].sort(), ['c', 'd', 'e']);

    const aged = harness();
    aged.span('old', -5 * 60 * 1000 - 1);
    aged.span('young', -1000);
    aged.victims.sweep();
    assert.equal(aged.victims.open, 1);
    aged.victims.blocked(block(10, 20, 'spin'));
    assert.deepEqual([...aged.tags.keys()], ['young']);
  });

  it('keeps no span once it ended and a sweep (each sample) or a full ring came; the open ones stay, in order', () => {
    const { victims, tags, span } = harness({ cap: 8 });
    const spans = ['a', 'b', 'c', 'd', 'e', 'f'].map((id, i) => span(id, i));
    for (const s of spans.filter((_, i) => i % 2 === 0)) s.ended = true;
    victims.sweep();
    assert.equal(victims.open, 3);
    for (const id of ['g', 'h', 'i', 'j', 'k', 'l']) span(id, 10).ended = true; // fills the ring: compacted
    assert.equal(victims.open, 4); // b, d, f, then l: the compaction at l's start let g to k go
    victims.blocked(block(100, 150, 'spin'));
    assert.deepEqual([...tags.keys()], ['b', 'd', 'f']);
    assert.ok([...tags.values()].every((f) => f.blockedMs === 50));
  });

  it('lets a span go when it ends on top of the stack, with the ended ones under it', () => {
    const { victims, span } = harness();
    const [a, b, c] = ['a', 'b', 'c'].map((id) => span(id, 0));
    b.ended = true;
    victims.spanEnded(b); // not on top: stays until c goes or a compaction
    assert.equal(victims.open, 3);
    c.ended = true;
    victims.spanEnded(c);
    assert.equal(victims.open, 1);
    a.ended = true;
    victims.spanEnded(a);
    assert.equal(victims.open, 0);
  });

  it('ignores a record without a block (end not after start, or no record)', () => {
    const { victims, tags, span } = harness();
    span('a', 0);
    assert.equal(victims.blocked(block(20, 20, 'spin')), 0);
    assert.equal(victims.blocked(/** @type {any} */ (null)), 0);
    assert.equal(tags.size, 0);
  });

  it('names its keys under uvscope.eventloop.*, each in the tables of docs/opentelemetry.md and docs/datadog.md', () => {
    assert.deepEqual(VICTIM_KEYS, {
      blockedMs: 'uvscope.eventloop.blocked_ms',
      blocker: 'uvscope.eventloop.blocker',
      caller: 'uvscope.eventloop.blocker.caller',
      route: 'uvscope.eventloop.blocker.route',
      cause: 'uvscope.eventloop.block.cause',
    });
    for (const doc of ['opentelemetry.md', 'datadog.md']) {
      const text = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', doc), 'utf8');
      for (const key of Object.values(VICTIM_KEYS)) assert.ok(text.includes(`| \`${key}\` |`), `${doc}: ${key}`);
    }
  });
});
