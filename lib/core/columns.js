'use strict';

// The findings window's per-interval numbers in columns of one Float64Array, a row per summary,
// allocated once for the window's length. As fields of plain objects every double is a heap
// number of its own (16 bytes, plus the field): at a 100 ms interval the window's 600 summaries
// held ~19 of them each, all alive for the window's 60 s, in old space (RSS that grows with the
// number of intervals) and, while the window fills, surviving scavenges (what makes V8 grow its
// young generation early). In a typed array they are 8 bytes each, outside V8's heap, and the
// same bytes are written again in place when a summary leaves the window and is overwritten.
//
// A figure is read and written as a property (an accessor on the view's prototype), so the rules
// read `s.delayMax` as before; null, undefined and any value that is not a number are kept as
// such (a kind byte per cell; a value of another type in a Map, which a sampler never gives).

const NUMBER = 0;
const NULL = 1;
const UNDEFINED = 2;
const OTHER = 3;

class Columns {
  /**
   * @param {number} rows how many views the window holds at most (more grow the arrays)
   * @param {number} width the columns of a row
   * @param {number} [max] rows it grows to at most (row() doubles the arrays up to it)
   */
  constructor(rows, width, max = Infinity) {
    this.width = width;
    this.max = max;
    this.rows = Math.max(1, Math.min(rows, max));
    this.used = 0;
    this.values = new Float64Array(this.rows * width);
    this.kinds = new Uint8Array(this.rows * width);
    /** @type {Map<number, unknown>|null} */
    this.others = null;
  }

  /** The first cell of a new row. */
  row() {
    if (this.used === this.rows) {
      // Not in the engine (its window never holds more than the rows it asked for); a view made
      // on its own (tests calling summarize()) has a row of its own. The page's history grows to
      // its max as it fills.
      const rows = Math.max(this.used + 1, Math.min(this.rows * 2, this.max));
      const values = new Float64Array(rows * this.width);
      const kinds = new Uint8Array(rows * this.width);
      values.set(this.values);
      kinds.set(this.kinds);
      this.values = values;
      this.kinds = kinds;
      this.rows = rows;
    }
    return this.used++ * this.width;
  }

  /** @param {number} i a cell */
  get(i) {
    const kind = this.kinds[i];
    if (kind === NUMBER) return this.values[i];
    if (kind === NULL) return null;
    if (kind === UNDEFINED) return undefined;
    return /** @type {Map<number, unknown>} */ (this.others).get(i);
  }

  /**
   * @param {number} i a cell
   * @param {unknown} v
   */
  set(i, v) {
    if (this.kinds[i] === OTHER) /** @type {Map<number, unknown>} */ (this.others).delete(i);
    if (typeof v === 'number') {
      this.values[i] = v;
      this.kinds[i] = NUMBER;
    } else if (v === null) {
      this.kinds[i] = NULL;
    } else if (v === undefined) {
      this.kinds[i] = UNDEFINED;
    } else {
      this.kinds[i] = OTHER;
      (this.others || (this.others = new Map())).set(i, v);
    }
  }
}

/**
 * Define each name as an enumerable accessor on proto, reading and writing the view's cell
 * (`this.cells` the Columns, `this.at` the view's first cell) at offset + its index.
 * @param {object} proto
 * @param {readonly string[]} names
 * @param {number} [offset]
 */
function defineColumns(proto, names, offset = 0) {
  for (let j = 0; j < names.length; j++) {
    const at = offset + j;
    Object.defineProperty(proto, names[j], {
      get() {
        return this.cells.get(this.at + at);
      },
      set(v) {
        this.cells.set(this.at + at, v);
      },
      enumerable: true,
      configurable: false,
    });
  }
}

module.exports = { Columns, defineColumns };
