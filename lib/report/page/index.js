'use strict';

// The page at GET / of the agent's endpoint and the static HTML report: one self-contained file
// (lib/report/page/page.html: no CDN, no build step) that draws /snapshot.json and /history.json, or,
// in a static report, the data embedded in it.

const fs = require('fs');
const path = require('path');
const { summarize } = require('./summary');
const { pageSource } = require('../pool-words');
const { Columns } = require('../../core/columns');

const HISTORY_ENTRIES = 300; // 5 minutes at the default 1 s interval
const EMBED_MARKER = '<script id="uvscope-embedded" type="application/json">null</script>';
let template = null;

/** The page as served at GET / (read once, then kept). */
function pageHtml() {
  if (template === null) {
    const raw = fs.readFileSync(path.join(__dirname, 'page.html'), 'utf8');
    template = raw.replace('/*UVSCOPE_SUMMARIZE*/null', summarize.toString())
      .replace('/*UVSCOPE_POOL_WORDS*/null', pageSource());
  }
  return template;
}

/**
 * The page as one static file with the data embedded, to attach to a ticket.
 * @param {{ snapshot: object|null, history?: object[], generatedAt?: number }} data
 * @returns {string}
 */
function staticReport({ snapshot, history = [], generatedAt = Date.now() }) {
  const json = JSON.stringify({ snapshot, history, generatedAt })
    // Inside <script>: no '</script>' or '<!--' can end or change it, and no line separators.
    .replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
  return pageHtml().replace(EMBED_MARKER, () => `<script id="uvscope-embedded" type="application/json">${json}</script>`);
}

/**
 * The last minutes of compact snapshot summaries, for the page's charts (/history.json). An
 * entry's numbers are kept in a row of typed columns (lib/core/columns.js), its keys once in a
 * shape shared by every entry of that shape: as objects an entry was 7 objects and ~6 heap
 * numbers, ~470 bytes alive for the history's 5 minutes (30 s at a 100 ms interval), ~140 KB for
 * a full history; a row is 18 cells of 9 bytes, written again in place when the entry leaves.
 * list() builds the entries again as summarize() gave them (the same keys in the same order, the
 * same values). An entry of no shape kept (more leaves than a row, an array in it, more than
 * MAX_SHAPES shapes) is kept as it is.
 */
class History {
  #max;
  /** @type {Columns|null} made at the first entry */
  #cells = null;
  // Ring: for each position a Shape (its row holds the numbers) or the entry itself.
  /** @type {(Shape|object)[]} */
  #slots = [];
  #start = 0;
  /** @type {Shape[]} */
  #shapes = [];

  /** @param {{ max?: number }} [options] */
  constructor({ max = HISTORY_ENTRIES } = {}) {
    this.#max = Math.max(1, max);
  }

  /** @param {object} snapshot */
  add(snapshot) {
    const entry = summarize(snapshot);
    const slots = this.#slots;
    let at;
    if (slots.length < this.#max) {
      at = slots.length;
      slots.push(entry);
    } else {
      at = this.#start;
      this.#start = (at + 1) % this.#max;
    }
    const shape = this.#shapeOf(entry);
    if (shape === null) {
      slots[at] = entry;
      return;
    }
    const cells = this.#cells || (this.#cells = new Columns(16, ROW_CELLS, this.#max));
    while (cells.used <= at) cells.row();
    writeRow(shape, entry, cells, at * ROW_CELLS);
    slots[at] = shape;
  }

  /**
   * @returns {object[]} oldest first, as summarize() gave them: new objects, for the caller to
   *   serialize (/history.json, the exit report)
   */
  list() {
    const slots = this.#slots;
    const out = new Array(slots.length);
    for (let i = 0; i < slots.length; i++) {
      const at = (this.#start + i) % slots.length;
      const slot = slots[at];
      out[i] = slot instanceof Shape ? readRow(slot, /** @type {Columns} */ (this.#cells), { at: at * ROW_CELLS }) : slot;
    }
    return out;
  }

  // The kept shape entry fits, a new one if none does (while fewer than MAX_SHAPES), or null.
  #shapeOf(entry) {
    const shapes = this.#shapes;
    for (let i = 0; i < shapes.length; i++) if (fits(shapes[i], entry)) return shapes[i];
    if (shapes.length >= MAX_SHAPES) return null;
    const shape = shapeOf(entry);
    if (shape === null || shape.leaves > ROW_CELLS) return null;
    shapes.push(shape);
    return shape;
  }
}

// Cells of a row: an entry's numbers (time, pid, pending by kind (dns and fs, and crypto, zlib and
// other while the tracer is armed), queued (dns, fs), two probes' sum, count and in flight, the
// loop's max, p99 and utilization): 18 at most from uvscope's own samplers.
const ROW_CELLS = 18;
// Shapes kept: the kinds and probes listed change as work starts (a probe's figures are null
// until its first reading), a few times in a process's life.
const MAX_SHAPES = 16;

// The keys of an entry, in order, each a leaf (a number or another value that is not an object)
// or an object of its own Shape.
class Shape {
  /**
   * @param {string[]} keys
   * @param {(Shape|null)[]} kids
   */
  constructor(keys, kids) {
    this.keys = keys;
    this.kids = kids;
    let leaves = 0;
    for (let i = 0; i < kids.length; i++) leaves += kids[i] === null ? 1 : /** @type {Shape} */ (kids[i]).leaves;
    this.leaves = leaves;
  }
}

const isObject = (v) => v !== null && typeof v === 'object';

// The shape of o, or null where an array is in it (kept as the entry itself).
function shapeOf(o) {
  if (Array.isArray(o)) return null;
  const keys = [];
  const kids = [];
  for (const k in o) {
    const v = o[k];
    let kid = null;
    if (isObject(v) && (kid = shapeOf(v)) === null) return null;
    keys.push(k);
    kids.push(kid);
  }
  return new Shape(keys, kids);
}

// Whether o has shape's keys in its order, an object where the shape has one and a leaf where it
// has a leaf.
function fits(shape, o) {
  if (Array.isArray(o)) return false;
  const keys = shape.keys;
  let j = 0;
  for (const k in o) {
    if (j >= keys.length || keys[j] !== k) return false;
    const v = o[k];
    const kid = shape.kids[j];
    if (kid === null ? isObject(v) : !isObject(v) || !fits(kid, v)) return false;
    j++;
  }
  return j === keys.length;
}

// o's leaves into cells from at on, in the shape's order; returns the next cell.
function writeRow(shape, o, cells, at) {
  for (let j = 0; j < shape.keys.length; j++) {
    const v = o[shape.keys[j]];
    const kid = shape.kids[j];
    if (kid === null) cells.set(at++, v);
    else at = writeRow(kid, v, cells, at);
  }
  return at;
}

// A new object of shape from the cells at cursor.at on (moved past them).
function readRow(shape, cells, cursor) {
  const o = {};
  for (let j = 0; j < shape.keys.length; j++) {
    const kid = shape.kids[j];
    o[shape.keys[j]] = kid === null ? cells.get(cursor.at++) : readRow(kid, cells, cursor);
  }
  return o;
}

/**
 * A new, empty History.
 * @param {{ max?: number }} [options] how many summaries to keep (default 300: 5 minutes at 1 s)
 * @returns {History}
 */
function createHistory(options) {
  return new History(options);
}

module.exports = { pageHtml, staticReport, History, createHistory, summarize };
