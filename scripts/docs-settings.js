'use strict';

// What scripts/docs.js renders from the settings rows (lib/agent/options.js SETTINGS, declared by
// each part): the settings tables of the docs and the options of start() in index.d.ts.

const { EXPORTERS } = require('../exporters');

const code = (s) => `\`${s}\``;
const cell = (s) => String(s).replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** What a setting is and what it accepts, in one line. */
function describe(row) {
  return row.doc ? `${row.doc}: ${row.accepted}` : row.accepted;
}

/** A default as the tables show it (test/agent/options.test.js reads it back). */
function shownDefault(v) {
  return v === undefined || (Array.isArray(v) && v.length === 0) ? 'none' : code([].concat(v).join(','));
}

/**
 * The settings table: one row per setting whose path starts with one of `prefixes` (every setting
 * but the test-only ones when there is none).
 * @param {readonly import('../lib/core/setting').Setting[]} rows
 * @param {string[]} prefixes e.g. ['datadog'] or ['tracer', 'dns']
 * @returns {string}
 */
function settingsTable(rows, prefixes) {
  const wanted = rows.filter((r) => (prefixes.length === 0
    ? !r.path.startsWith('test.')
    : prefixes.some((p) => r.path === p || r.path.startsWith(`${p}.`))));
  const lines = [
    '| variable | option | default | what, and what is accepted |',
    '| --- | --- | --- | --- |',
    ...wanted.map((r) => {
      const text = describe(r);
      const option = r.late ? '— (read when used)' : code(r.path);
      const variables = r.env.length ? r.env.map(code).join(', then ') : '— (start() only)';
      return `| ${variables} | ${option} | ${shownDefault(r.default)} | ${cell(text)} |`;
    }),
  ];
  return `${lines.join('\n')}\n`;
}

// What each group of options is, for index.d.ts (a new group without a line here gets a plain one).
const GROUPS = Object.freeze({
  prometheus: 'The Prometheus exporter and the agent\'s HTTP endpoint (exporters/prometheus/).',
  snapshot: 'Where /snapshot.json is served when Prometheus is off (with Prometheus on, it is on its server).',
  multiprocess: 'Several processes of one app on one endpoint (cluster, PM2, NODE_OPTIONS children).',
  tracer: 'The threadpool tracer (async_hooks).',
  dns: 'The DNS source.',
  otlp: 'The OpenTelemetry (OTLP) exporter.',
  datadog: 'The DogStatsD exporter.',
});

/** @param {string} group */
const about = (group) => GROUPS[group] || `The ${group} options.`;
/** @param {string} group */
const interfaceName = (group) => `${group[0].toUpperCase()}${group.slice(1)}Options`;

/** One property of an options interface, with its JSDoc. */
function property(row, key, indent) {
  const shown = shownDefault(row.default);
  const where = [row.env.join(' / '), shown === 'none' ? '' : `default ${shown.replace(/`/g, '')}`].filter(Boolean).join(', ');
  const text = describe(row).replace(/\*\//g, '*\\/');
  const type = row.ts || row.parse.ts;
  if (!type) throw new Error(`setting ${row.path}: its parser has no TypeScript type (ts)`);
  return [`${indent}/** ${text}${where ? ` (${where})` : ''}. */`, `${indent}${key}?: ${type};`];
}

/**
 * The options of start() as TypeScript, from the rows read at start() (late ones are not options):
 * ExporterName, Options, and one interface per group of options.
 * @param {readonly import('../lib/core/setting').Setting[]} rows
 * @returns {string}
 */
function optionsTypes(rows) {
  const early = rows.filter((r) => !r.late);
  const groups = [...new Set(early.filter((r) => r.path.includes('.')).map((r) => r.path.split('.')[0]))];
  const out = [`export type ExporterName = ${EXPORTERS.map((e) => `'${e.name}'`).join(' | ')};`, '', 'export interface Options {'];
  const seen = new Set();
  for (const row of early) {
    const [group, key] = row.path.split('.');
    if (key === undefined) out.push(...property(row, group, '  '));
    else if (!seen.has(group)) {
      seen.add(group);
      out.push(`  /** ${about(group)} */`, `  ${group}?: ${interfaceName(group)};`);
    }
  }
  out.push('}');
  for (const group of groups) {
    out.push('', `/** ${about(group)} */`, `export interface ${interfaceName(group)} {`);
    for (const row of early.filter((r) => r.path.startsWith(`${group}.`))) out.push(...property(row, row.path.slice(group.length + 1), '  '));
    out.push('}');
  }
  return `${out.join('\n')}\n`;
}

module.exports = { settingsTable, optionsTypes, shownDefault };
