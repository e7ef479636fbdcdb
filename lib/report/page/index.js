'use strict';

// The page at GET / of the agent's endpoint and the static HTML report: one self-contained file
// (lib/report/page/page.html: no CDN, no build step) that draws /snapshot.json and /history.json, or,
// in a static report, the data embedded in it.

const fs = require('fs');
const path = require('path');
const { summarize } = require('./summary');

const HISTORY_ENTRIES = 300; // 5 minutes at the default 1 s interval
const EMBED_MARKER = '<script id="uvscope-embedded" type="application/json">null</script>';
let template = null;

/** The page as served at GET / (read once, then kept). */
function pageHtml() {
  if (template === null) {
    const raw = fs.readFileSync(path.join(__dirname, 'page.html'), 'utf8');
    template = raw.replace('/*UVSCOPE_SUMMARIZE*/null', summarize.toString());
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

/** The last minutes of compact snapshot summaries, for the page's charts (/history.json). */
class History {
  /** @type {object[]} oldest first */
  #entries = [];
  #max;

  /** @param {{ max?: number }} [options] */
  constructor({ max = HISTORY_ENTRIES } = {}) {
    this.#max = max;
  }

  /** @param {object} snapshot */
  add(snapshot) {
    const entry = summarize(snapshot);
    // Full: the oldest entry leaves and takes the new figures (at a 100 ms interval the history
    // holds 30 s, and a new entry of 7 objects per sample would all survive scavenges).
    this.#entries.push(this.#entries.length >= this.#max ? overwrite(this.#entries.shift(), entry) : entry);
  }

  /**
   * @returns {object[]} oldest first; the entries are overwritten as later snapshots come (once
   *   the history is full), so a caller serializes them at once (/history.json, the exit report)
   */
  list() {
    return this.#entries.slice();
  }
}

// fresh's figures written into old where both have the same keys in the same order (an object in
// both: the same, one level down; an object in one only, such as a probe's figures that are null
// while it has no reading: fresh's value), so that old serializes as fresh does; else fresh. A
// number that did not change is left as it is (a double read from a sample is a new heap number,
// which the entry would keep for the history's 30 s at a 100 ms interval).
function overwrite(old, fresh) {
  const keys = Object.keys(fresh);
  const oldKeys = Object.keys(old);
  if (keys.length !== oldKeys.length) return fresh;
  for (let i = 0; i < keys.length; i++) if (keys[i] !== oldKeys[i]) return fresh;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    const v = fresh[k];
    const was = old[k];
    if (isObject(v) && isObject(was)) old[k] = overwrite(was, v);
    else if (v !== was) old[k] = v;
  }
  return old;
}

function isObject(v) {
  return v !== null && typeof v === 'object';
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
