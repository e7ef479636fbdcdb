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
    this.#entries.push(summarize(snapshot));
    if (this.#entries.length > this.#max) this.#entries.shift();
  }

  /** @returns {object[]} oldest first */
  list() {
    return this.#entries.slice();
  }
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
