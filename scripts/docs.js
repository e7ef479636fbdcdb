#!/usr/bin/env node
'use strict';

// The tables in README.md and docs/*.md that copy code (the metric catalog, as each exporter names
// it, the settings rows and the warning codes) are generated here, between markers, wherever they
// are in those files:
//
//   <!-- generated: metrics threadpool -->
//   ...table...
//   <!-- /generated -->
//
// and so are the options of start() in index.d.ts, between `// <generated: options>` and
// `// </generated>`, from the settings rows (each parser's `ts` is its TypeScript type).
//
//   node scripts/docs.js          rewrite every generated table
//   node scripts/docs.js --check  list the tables that differ from the code (exit 1), as
//                                 test/scripts/docs.test.js does
//
// Adding a metric or a setting is: its declaration (in its source or exporter), then
// `node scripts/docs.js`.

const fs = require('fs');
const path = require('path');
const { CATALOG, shortName } = require('../lib/snapshot/catalog');
const { WARNINGS } = require('../lib/core/warnings');
const { SETTINGS } = require('../lib/agent/options');
const { settingsTable, optionsTypes } = require('./docs-settings');
const { prometheusName } = require('../exporters/prometheus');
const { sentMetrics } = require('../exporters/datadog/series');
const { instrumentOf } = require('../exporters/otlp/instruments');
const FINDING_RULES = require('../lib/findings/index');
const { LIMITS: FINDING_LIMITS } = require('../lib/findings/engine');

const ROOT = path.join(__dirname, '..');
const BLOCK = /(<!-- generated: ([^>]*?) -->\n)([\s\S]*?)(<!-- \/generated -->)/g;

// The metric sections of docs/metrics.md. A metric belongs to the first group whose test it passes; a
// metric in no group fails test/scripts/docs.test.js (add it to a group, or a group here).
const GROUPS = Object.freeze([
  ['handles', (n) => /^nodejs\.uv\.(handles|requests)\./.test(n)],
  ['threadpool', (n) => n.startsWith('nodejs.uv.threadpool.') || n.startsWith('uvscope.probe.') || n.startsWith('uvscope.tracer.')],
  ['eventloop', (n) => n.startsWith('nodejs.eventloop.')],
  ['dns', (n) => n.startsWith('dns.') || n.startsWith('nodejs.dns.')],
  ['listen', (n) => n.startsWith('nodejs.net.server.') || n.startsWith('system.network.tcp.listen.')],
  ['connections', (n) => n.startsWith('nodejs.net.') || n.startsWith('nodejs.http.')],
  ['cpu', (n) => n.startsWith('process.cpu.') || n.startsWith('container.cpu.')],
  ['memory', (n) => n.startsWith('v8js.') || n.startsWith('nodejs.memory.')],
  ['agent', (n) => n.startsWith('uvscope.')],
]);

/**
 * The docs/metrics.md group of a metric, or undefined.
 * @param {string} name canonical name
 */
function groupOf(name) {
  const g = GROUPS.find(([, test]) => test(name));
  return g && g[0];
}

const code = (s) => `\`${s}\``;
const cell = (s) => String(s).replace(/\|/g, '\\|').replace(/\n/g, ' ');
const row = (cells) => `| ${cells.map(cell).join(' | ')} |`;

function table(header, rows) {
  return [row(header), row(header.map(() => '---')), ...rows.map(row)].join('\n') + '\n';
}

/** docs/metrics.md: one section's metrics with their Prometheus names. */
function metricsTable(group) {
  if (!GROUPS.some(([g]) => g === group)) throw new Error(`no metric group ${group}`);
  const rows = CATALOG.filter((m) => groupOf(m.name) === group).map((m) => {
    const labels = m.attributes.length ? `{${m.attributes.map(shortName).join(', ')}}` : '';
    return [code(prometheusName(m) + labels), code(m.name), m.type, code(m.unit), m.attributes.map(code).join(', '), m.help];
  });
  return table(['Prometheus', 'canonical', 'type', 'unit', 'attributes', 'meaning'], rows);
}

const DOGSTATSD_TYPES = Object.freeze({ g: 'gauge', c: 'count (per flush)', d: 'distribution, one value per event' });

/** docs/datadog.md: every name the DogStatsD exporter sends. */
function datadogTable() {
  const byName = new Map(CATALOG.map((m) => [m.name, m]));
  const rows = sentMetrics().map((s) => {
    const m = byName.get(s.from);
    const suffix = s.name.slice(m.name.length); // '', '.count' or '.sum'
    let prom = prometheusName(m);
    if (suffix) prom += `_${suffix.slice(1)}`;
    const unit = s.type === 'g' || s.type === 'd' || suffix === '.sum' ? m.unit : '1';
    return [code(s.name), DOGSTATSD_TYPES[s.type], code(unit), m.attributes.map((a) => code(shortName(a))).join(', '), code(m.name), code(prom)];
  });
  return table(['DogStatsD name', 'type', 'unit', 'tags', 'catalog', 'Prometheus'], rows);
}

/** docs/opentelemetry.md: every instrument the OTLP exporter creates. */
function otlpTable() {
  const INSTRUMENTS = { histogram: 'Histogram, one observation per event', observableCounter: 'ObservableCounter', observableGauge: 'ObservableGauge' };
  const rows = [];
  for (const m of CATALOG) {
    const kind = instrumentOf(m, { runtimeMetrics: true });
    if (!kind) continue; // pre-bucketed: left out (see "What is left out")
    let instrument = INSTRUMENTS[kind];
    if (m.runtimeMetrics) instrument += '; not next to runtime-node (`UVSCOPE_OTLP_RUNTIME_METRICS`)';
    rows.push([code(m.name), instrument, code(m.unit), m.attributes.map(code).join(', ')]);
  }
  return table(['name', 'instrument', 'unit', 'attributes'], rows);
}

/** docs/opentelemetry.md: the catalog histograms the OTLP exporter leaves out. */
function otlpLeftOut() {
  const names = CATALOG.filter((m) => !instrumentOf(m, { runtimeMetrics: true })).map((m) => code(m.name));
  return `Pre-bucketed histograms left out: ${names.join(', ')}.\n`;
}

/** docs/settings.md: every process warning code. */
function warningsTable() {
  return table(['code', 'meaning'], Object.values(WARNINGS).map((w) => [code(w.code), w.meaning]));
}

/** A sentence from a docs line: capital first letter (unless it is code), full stop. */
const sentence = (s) => `${s[0].toUpperCase()}${s.slice(1)}${/[.!?]["')]?$/.test(s) ? '' : '.'}`;

/**
 * The findings, from each rule's declaration (lib/findings/rules/*.js).
 * `findings`: docs/findings.md, the catalogue: per rule what it means, what fires it with the
 * limit values, its impact, its advice and one example.
 * `findings summary`: README, one row per rule: id, meaning, example.
 * @param {string} [kind] 'summary' or nothing
 */
function findingsBlock(kind) {
  if (kind === 'summary') {
    return table(['finding', 'what it means', 'for example'], FINDING_RULES.map((r) => [code(r.id), r.docs.means, r.docs.example]));
  }
  if (kind !== undefined) throw new Error(`no findings block "${kind}" (findings, or findings summary)`);
  const l = FINDING_LIMITS;
  const out = [`Severity follows from \`impact.score\`, the seconds lost per second of the ${l.windowMs / 1000} s window: critical from ${l.criticalScore}, warning from ${l.warningScore}, else info. Findings come costliest first.\n`];
  for (const r of FINDING_RULES) {
    const limits = Object.entries(r.limits).map(([k, v]) => `${code(k)} ${v}`).join(', ');
    out.push([
      `### ${code(r.id)}\n`,
      `${sentence(r.docs.means)}\n`,
      `- **Fires when**: ${sentence(r.docs.fires(l))}`,
      `- **Impact**: ${sentence(r.docs.impact)}`,
      `- **Advice includes**: ${sentence(r.docs.advice)}`,
      `- **Example**: ${sentence(r.docs.example)}`,
      limits ? `- **Limits** (lib/findings/rules/${r.id}.js): ${limits}.` : null,
    ].filter((x) => x !== null).join('\n') + '\n');
  }
  return out.join('\n');
}

const GENERATORS = Object.freeze({
  metrics: metricsTable,
  datadog: datadogTable,
  otlp: otlpTable,
  'otlp-left-out': otlpLeftOut,
  warnings: warningsTable,
  findings: findingsBlock,
  settings: (...prefixes) => settingsTable(SETTINGS, prefixes),
});

const TYPES_FILE = 'index.d.ts';
const TYPES_BLOCK = /(\/\/ <generated: options>\n)([\s\S]*?)(\/\/ <\/generated>)/;

/**
 * index.d.ts with its generated options rendered from the settings rows.
 * @param {string} text
 * @returns {{ text: string, blocks: { name: string, before: string, after: string }[] }}
 */
function renderTypes(text) {
  const blocks = [];
  const out = text.replace(TYPES_BLOCK, (all, open, body, close) => {
    const after = optionsTypes(SETTINGS);
    blocks.push({ name: 'options', before: body, after });
    return open + after + close;
  });
  return { text: out, blocks };
}

/**
 * A markdown text with every generated block rendered from the code.
 * @param {string} text
 * @returns {{ text: string, blocks: { name: string, before: string, after: string }[] }}
 */
function render(text) {
  const blocks = [];
  const out = text.replace(BLOCK, (all, open, spec, body, close) => {
    const [name, ...args] = spec.trim().split(/\s+/);
    const generate = GENERATORS[name];
    if (!generate) throw new Error(`unknown generated block "${spec}"`);
    const after = generate(...args);
    blocks.push({ name: spec.trim(), before: body, after });
    return open + after + close;
  });
  return { text: out, blocks };
}

/** README.md and docs/*.md, relative to the repository. */
function files() {
  return ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => path.join('docs', f))];
}

/**
 * What differs from the code: generated blocks whose text is not what the code gives, catalog
 * metrics in no group, and groups without a block in docs/metrics.md.
 * @returns {string[]} one line per problem; empty when the docs match
 */
function check() {
  const problems = [];
  const specs = new Set();
  for (const file of files()) {
    const { blocks } = render(fs.readFileSync(path.join(ROOT, file), 'utf8'));
    for (const b of blocks) {
      specs.add(`${file}: ${b.name}`);
      if (b.before !== b.after) problems.push(`${file}: the "${b.name}" table differs from the code; run node scripts/docs.js`);
    }
  }
  for (const m of CATALOG) if (!groupOf(m.name)) problems.push(`lib/snapshot/catalog.js: ${m.name} is in no metrics group (scripts/docs.js GROUPS)`);
  const metricsPage = path.join('docs', 'metrics.md');
  for (const [g] of GROUPS) if (!specs.has(`${metricsPage}: metrics ${g}`)) problems.push(`${metricsPage}: no "metrics ${g}" table`);
  for (const s of [path.join('docs', 'settings.md') + ': warnings', 'README.md: findings summary', path.join('docs', 'findings.md') + ': findings', path.join('docs', 'datadog.md') + ': datadog', path.join('docs', 'opentelemetry.md') + ': otlp']) {
    if (!specs.has(s)) problems.push(`${s.replace(': ', ': no "')}" table`);
  }
  const types = renderTypes(fs.readFileSync(path.join(ROOT, TYPES_FILE), 'utf8'));
  if (types.blocks.length === 0) problems.push(`${TYPES_FILE}: no "// <generated: options>" block`);
  for (const b of types.blocks) if (b.before !== b.after) problems.push(`${TYPES_FILE}: the options differ from the settings rows; run node scripts/docs.js`);
  return problems;
}

/** Rewrite every generated block. @returns {string[]} the files changed */
function write() {
  const changed = [];
  for (const file of [...files(), TYPES_FILE]) {
    const p = path.join(ROOT, file);
    const before = fs.readFileSync(p, 'utf8');
    const { text } = file === TYPES_FILE ? renderTypes(before) : render(before);
    if (text !== before) {
      fs.writeFileSync(p, text);
      changed.push(file);
    }
  }
  return changed;
}

if (require.main === module) {
  if (process.argv.includes('--check')) {
    const problems = check();
    for (const p of problems) process.stderr.write(`${p}\n`);
    process.exitCode = problems.length ? 1 : 0;
  } else {
    const changed = write();
    process.stdout.write(changed.length ? `updated ${changed.join(', ')}\n` : 'docs already match the code\n');
  }
}

module.exports = { render, renderTypes, check, write, groupOf, GROUPS };
