'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { render, renderTypes, check, groupOf } = require('../../scripts/docs');
const { SETTINGS } = require('../../lib/agent/options');
const { CATALOG } = require('../../lib/snapshot/catalog');
const { prometheusName } = require('../../exporters/prometheus');

const ROOT = path.join(__dirname, '..', '..');
const read = (f) => fs.readFileSync(path.join(ROOT, f), 'utf8');

/** The rows of the generated blocks named `name` in a markdown text, as arrays of cells. */
function rows(text, name) {
  const out = [];
  for (const b of render(text).blocks) {
    if (!b.name.startsWith(name)) continue;
    for (const line of b.before.split('\n').slice(2)) if (line) out.push(line.slice(2, -2).split(' | '));
  }
  return out;
}

describe('scripts/docs: the tables in README.md and docs/ are the catalog\'s', () => {
  it('every generated table matches the code (else: node scripts/docs.js)', () => {
    assert.deepEqual(check(), []);
  });

  it('docs/metrics.md: every catalog metric in exactly one table, with its Prometheus name, type and unit', () => {
    const readme = rows(read('docs/metrics.md'), 'metrics');
    assert.deepEqual(readme.map((r) => r[1]).sort(), CATALOG.map((m) => `\`${m.name}\``).sort());
    for (const m of CATALOG) {
      const r = readme.find((x) => x[1] === `\`${m.name}\``);
      assert.ok(r[0].startsWith(`\`${prometheusName(m)}`), r[0]);
      assert.equal(r[2], m.type);
      assert.equal(r[3], `\`${m.unit}\``);
    }
  });

  it('a table that differs from the catalog is found, and rewritten', () => {
    const stale = '# x\n<!-- generated: metrics dns -->\n| Prometheus | canonical |\n| --- | --- |\n| `dns_lookup_seconds` | `dns.lookup` |\n<!-- /generated -->\n';
    const { text, blocks } = render(stale);
    assert.equal(blocks.length, 1);
    assert.notEqual(blocks[0].before, blocks[0].after);
    assert.match(text, /\| `dns_lookup_duration_seconds\{dns_question_name, error_type\}` \| `dns\.lookup\.duration` \| histogram \| `s` \|/);
    assert.equal(render(text).blocks[0].before, render(text).blocks[0].after, 'rendering is stable');
    assert.throws(() => render('<!-- generated: nonsense -->\n<!-- /generated -->'), /unknown generated block "nonsense"/);
  });

  it('a metric whose name fits no section of docs/metrics.md is reported, not dropped', () => {
    assert.equal(groupOf('nodejs.uv.threadpool.busy'), 'threadpool');
    assert.equal(groupOf('dns.lookup.queue_wait'), 'dns');
    assert.equal(groupOf('somewhere.else'), undefined);
  });

  it('docs/datadog.md and docs/opentelemetry.md show each exporter\'s names', () => {
    const dd = rows(read('docs/datadog.md'), 'datadog');
    assert.ok(dd.some((r) => r[0] === '`nodejs.uv.threadpool.queue_wait.count`' && r[1] === 'count (per flush)'));
    assert.ok(dd.some((r) => r[0] === '`dns.lookup.duration`' && r[1].startsWith('distribution')));
    const otlp = rows(read('docs/opentelemetry.md'), 'otlp');
    assert.ok(otlp.some((r) => r[0] === '`dns.lookup.duration`' && r[1].startsWith('Histogram')));
    assert.ok(!otlp.some((r) => r[0] === '`nodejs.eventloop.delay`'), 'pre-bucketed histograms are not exported over OTLP');
  });

  it('settings tables come from the rows: a prefix picks its rows, late ones are marked read when used', () => {
    const { blocks } = render('<!-- generated: settings datadog -->\n<!-- /generated -->\n');
    const lines = blocks[0].after.split('\n').filter((l) => l.startsWith('| `'));
    assert.equal(lines.length, SETTINGS.filter((s) => s.path.startsWith('datadog.') && s.env.length).length);
    assert.ok(lines.some((l) => l.startsWith('| `DD_DOGSTATSD_HOST`, then `DD_AGENT_HOST` | `datadog.host` | `localhost` |')));
    assert.ok(lines.some((l) => l.startsWith('| `DD_RUNTIME_METRICS_ENABLED` | — (read when used) | `false` |')));
  });

  it('index.d.ts: the options of start() are the rows read at start(), typed by their parsers', () => {
    const types = read('index.d.ts');
    const { blocks } = renderTypes(types);
    assert.equal(blocks.length, 1);
    assert.match(blocks[0].after, /export interface TracerOptions \{[^}]*mode\?: 'auto' \| 'on' \| 'off';/);
    assert.match(blocks[0].after, /export interface DatadogOptions \{[^}]*eventLoop\?: 'auto' \| boolean;/);
    assert.doesNotMatch(blocks[0].after, /runtimeMetrics\?: boolean/, 'late settings are not options');
    assert.match(types, /readonly dnsSlots: number;/);
  });
});
