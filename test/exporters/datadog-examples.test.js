'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { sentMetrics } = require('../../exporters/datadog/series');

const DIR = path.join(__dirname, '..', '..', 'examples', 'datadog');
const SENT = new Map(sentMetrics().map((m) => [m.name, m.type]));
// space aggregator (distributions also take count and percentiles) : metric { scope }
const METRIC_IN_QUERY = /\b(avg|sum|min|max|count|p50|p75|p90|p95|p99):([A-Za-z][A-Za-z0-9_.]*)\{([^}]*)\}/g;

/** The metrics a query reads; each must be one the exporter sends, with an aggregation its type allows. */
function checkQuery(q, where) {
  const found = [...q.matchAll(METRIC_IN_QUERY)];
  assert.ok(found.length > 0, `${where}: no metric in ${q}`);
  for (const [, agg, name, scope] of found) {
    assert.ok(SENT.has(name), `${where}: ${name} is not a metric uvscope sends (${[...SENT.keys()].join(', ')})`);
    const isDistribution = SENT.get(name) === 'd';
    assert.equal(/^(count|p\d+)$/.test(agg) ? isDistribution : true, true, `${where}: ${agg}: is for distributions, ${name} is not one`);
    // Datadog lower-cases tag values, so a query must too.
    assert.equal(scope, scope.toLowerCase(), `${where}: tag values in ${scope} must be lower case`);
  }
  assert.equal((q.match(/\(/g) || []).length, (q.match(/\)/g) || []).length, `${where}: unbalanced parentheses`);
}

describe('examples/datadog: monitors and dashboard in the Datadog API formats, on metrics uvscope sends', () => {
  it('monitors.json: POST /api/v1/monitor bodies whose threshold is the query\'s', () => {
    const monitors = JSON.parse(fs.readFileSync(path.join(DIR, 'monitors.json'), 'utf8'));
    assert.ok(Array.isArray(monitors) && monitors.length >= 4);
    const covered = new Set();
    for (const m of monitors) {
      assert.deepEqual(Object.keys(m).filter((k) => !['name', 'type', 'query', 'message', 'tags', 'priority', 'options'].includes(k)), []);
      assert.ok(['query alert', 'metric alert'].includes(m.type), m.type);
      assert.ok(typeof m.name === 'string' && m.name && typeof m.message === 'string' && m.message);
      assert.ok(Number.isInteger(m.priority) && m.priority >= 1 && m.priority <= 5);
      const q = /^(avg|sum|min|max)\(last_(\d+)([mhd])\):(.+) ([<>]=?) (-?[\d.]+)$/.exec(m.query);
      assert.ok(q, `monitor query shape: ${m.query}`);
      checkQuery(q[4], m.name);
      const { critical, warning } = m.options.thresholds;
      assert.equal(critical, Number(q[6]), `${m.name}: options.thresholds.critical must equal the query's threshold`);
      if (warning !== undefined) assert.ok(q[5].startsWith('>') ? warning < critical : warning > critical);
      for (const [, , name] of q[4].matchAll(METRIC_IN_QUERY)) covered.add(name);
    }
    for (const name of ['nodejs.uv.requests.active', 'nodejs.uv.threadpool.queue_wait.sum', 'dns.lookup.duration', 'nodejs.eventloop.delay.p99']) {
      assert.ok(covered.has(name), `no monitor on ${name}`);
    }
    // The pool held by work other than DNS (the crypto incident): the work probe's wait, not DNS.
    assert.ok(monitors.some((m) => /queue_wait\.sum\{queue:work\}/.test(m.query) && /queue_wait\.count\{queue:work\}/.test(m.query)), 'no monitor on the work probe\'s wait');
  });

  it('dashboard.json: a POST /api/v1/dashboard body with template variables used in every query', () => {
    const d = JSON.parse(fs.readFileSync(path.join(DIR, 'dashboard.json'), 'utf8'));
    assert.ok(d.title && ['ordered', 'free'].includes(d.layout_type));
    const vars = d.template_variables.map((v) => v.name);
    assert.ok(Array.isArray(d.widgets) && d.widgets.length > 0);
    for (const w of d.widgets) {
      const def = w.definition;
      assert.ok(['timeseries', 'toplist', 'query_value'].includes(def.type), def.type);
      assert.ok(def.title && def.requests.length > 0);
      for (const r of def.requests) {
        assert.equal(typeof r.q, 'string');
        checkQuery(r.q.replace(/\$(\w+)/g, (_, v) => (vars.includes(v) ? 'x:y' : `UNKNOWN_${v}`)), def.title);
        for (const v of vars) assert.ok(r.q.includes(`$${v}`), `${def.title}: ${r.q} ignores $${v}`);
        if (def.type === 'timeseries') assert.ok(['line', 'bars', 'area'].includes(r.display_type));
      }
    }
  });
});
