#!/usr/bin/env node
'use strict';

// The import rules of lib/README.md, checked (run first by `npm test`): no circle in the static
// relative require() graph of lib/, exporters/, bin/ and register.js (lazy requires inside
// functions count too), and no require pointing right in the layer order below: a layer may
// import itself and the layers to its left only.
//
//   node scripts/check-requires.js   lists each circle and each arrow back up (exit 1), or nothing

const fs = require('fs');
const path = require('path');

/** The layers, left to right, each a list of path prefixes (relative to the repository, '/' separated). */
const LAYERS = Object.freeze([
  ['settings', ['lib/settings/']], // one parser per type: imports nothing
  ['core', ['lib/core/']], // errors, warnings, reading a setting, channels, histograms, libuv's rules...
  ['sources', ['lib/sources/']],
  ['snapshot', ['lib/snapshot/']],
  ['findings', ['lib/findings/']],
  ['report', ['lib/report/']],
  ['exporters', ['exporters/']],
  ['endpoint', ['lib/endpoint/']], // serves the Prometheus text: after the exporters
  ['agent', ['lib/agent/']],
  ['entry', ['lib/index.js', 'bin/', 'register.js']],
].map(([name, prefixes]) => Object.freeze({ name, prefixes: Object.freeze(prefixes) })));

const ROOTS = Object.freeze(['lib', 'exporters', 'bin', 'register.js']);

/**
 * The layer index of a file, or -1 for a file in no layer.
 * @param {string} file relative, '/' separated
 */
function layerOf(file) {
  return LAYERS.findIndex((l) => l.prefixes.some((p) => (p.endsWith('/') ? file.startsWith(p) : file === p)));
}

/** Every .js file under the roots, relative to `root`, '/' separated. */
function listFiles(root) {
  const out = [];
  const walk = (rel) => {
    const abs = path.join(root, rel);
    if (!fs.existsSync(abs)) return;
    if (fs.statSync(abs).isDirectory()) {
      for (const name of fs.readdirSync(abs).sort()) if (name !== 'node_modules') walk(`${rel}/${name}`);
    } else if (rel.endsWith('.js')) out.push(rel);
  };
  for (const r of ROOTS) walk(r);
  return out;
}

/**
 * The relative paths a file's code passes to require() (comments left out).
 * @param {string} text
 * @returns {string[]}
 */
function requiredPaths(text) {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
  return [...code.matchAll(/\brequire\(\s*(['"])(\.{1,2}(?:\/[^'"]*)?)\1\s*\)/g)].map((m) => m[2]);
}

/** The file a relative require resolves to (as Node does for .js, .json and index.js), or null. */
function resolveRequire(root, from, spec) {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  for (const candidate of [base, `${base}.js`, `${base}.json`, `${base}/index.js`]) {
    const abs = path.join(root, candidate);
    if (fs.existsSync(abs) && fs.statSync(abs).isFile()) return candidate;
  }
  return null;
}

/**
 * The require graph: file -> files it requires (only .js files under the roots).
 * @param {string} root the repository
 * @returns {Map<string, string[]>}
 */
function graphOf(root) {
  const files = listFiles(root);
  const known = new Set(files);
  const graph = new Map();
  for (const file of files) {
    const targets = [];
    for (const spec of requiredPaths(fs.readFileSync(path.join(root, file), 'utf8'))) {
      const target = resolveRequire(root, file, spec);
      if (target && known.has(target) && !targets.includes(target)) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** Every circle, once each, as the list of files around it (first file repeated at the end). */
function circles(graph) {
  const found = [];
  const seen = new Set();
  const state = new Map(); // file -> 'open' while on the stack, 'done' after
  const stack = [];
  const visit = (file) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) || []) {
      if (state.get(next) === 'open') {
        const circle = [...stack.slice(stack.indexOf(next)), next];
        const key = [...circle.slice(0, -1)].sort().join('\n');
        if (!seen.has(key)) {
          seen.add(key);
          found.push(circle);
        }
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

/**
 * What breaks the rules in a repository.
 * @param {string} [root] the repository
 * @returns {string[]} one line per problem; empty when the graph is clean
 */
function check(root = path.join(__dirname, '..')) {
  const graph = graphOf(root);
  const problems = [];
  for (const [file, targets] of graph) {
    const from = layerOf(file);
    for (const target of targets) {
      const to = layerOf(target);
      if (from >= 0 && to > from) {
        problems.push(`arrow back up: ${file} (${LAYERS[from].name}) requires ${target} (${LAYERS[to].name}), a layer to its right`);
      }
    }
  }
  for (const circle of circles(graph)) problems.push(`circle: ${circle.join(' -> ')}`);
  return problems;
}

if (require.main === module) {
  const problems = check(process.argv[2] ? path.resolve(process.argv[2]) : undefined);
  for (const p of problems) process.stderr.write(`${p}\n`);
  if (problems.length) {
    process.stderr.write(`layers, left to right: ${LAYERS.map((l) => l.name).join(' -> ')} (lib/README.md)\n`);
  }
  process.exitCode = problems.length ? 1 : 0;
}

module.exports = { check, graphOf, circles, layerOf, LAYERS };
