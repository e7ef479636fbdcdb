'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { CATALOG } = require('../../lib/snapshot/catalog');
const { prometheusName } = require('../../exporters/prometheus');
const { ROOT, freePort } = require('../helpers/child');
const { requirePrometheus, startPrometheus } = require('../helpers/prometheus');

const DASHBOARD = path.join(ROOT, 'examples', 'grafana', 'uvscope.json');

/** Every series name uvscope exports: the catalog's Prometheus names, histograms as their series. */
function exportedNames() {
  const names = new Set();
  for (const def of CATALOG) {
    const name = prometheusName(def);
    if (def.type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    else names.add(name);
  }
  return names;
}

/** Panels, including those inside collapsed rows. */
function allPanels(dashboard) {
  return dashboard.panels.flatMap((p) => [p, ...(p.panels || [])]);
}

/** { where, expr } for every PromQL expression: panel targets and query variables. */
function expressions(dashboard) {
  const out = [];
  for (const p of allPanels(dashboard)) {
    for (const t of p.targets || []) out.push({ where: `panel ${p.id} "${p.title}" ${t.refId}`, expr: t.expr });
  }
  for (const v of dashboard.templating.list) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : v.query.query;
    // label_values(selector, label) is Grafana's, not PromQL: the selector is the PromQL part.
    const m = /^label_values\((.*),\s*[a-zA-Z_]\w*\)$/.exec(q.trim());
    assert.ok(m, `variable ${v.name}: expected label_values(selector, label), got ${q}`);
    out.push({ where: `variable ${v.name}`, expr: m[1] });
  }
  return out;
}

// Grafana's variables, as Grafana would put them into a query (multi-value with All: a regex).
const SUBSTITUTIONS = [
  [/\$\{?job\}?/g, '.+'],
  [/\$\{?instance\}?/g, '.+'],
  [/\$\{?__rate_interval\}?/g, '1m'],
  [/\$\{?__interval\}?/g, '15s'],
  [/\$\{?__range\}?/g, '1h'],
];

function substitute(expr) {
  let out = expr;
  for (const [re, value] of SUBSTITUTIONS) out = out.replace(re, value);
  assert.ok(!out.includes('$'), `unknown template variable in ${expr}`);
  return out;
}

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'and', 'or', 'unless', 'atan2', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects: identifiers left once strings, label matchers,
 * ranges, grouping label lists, offsets and numbers are removed, other than functions (followed
 * by a parenthesis) and keywords.
 */
function metricNames(expr) {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\boffset\s+-?[0-9a-z]+/g, ' ')
    .replace(/(^|[^a-zA-Z_:0-9])[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?/g, '$1 ');
  const names = new Set();
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(?!\s*\(|[a-zA-Z0-9_:])/g)) {
    if (!KEYWORDS.has(m[0].toLowerCase())) names.add(m[0]);
  }
  return [...names];
}

describe('examples/grafana/uvscope.json', function () {
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8'));

  it('is a Grafana dashboard model with a Prometheus data source variable and job/instance variables', () => {
    assert.equal(typeof dashboard.title, 'string');
    assert.equal(dashboard.uid, 'uvscope');
    assert.ok(dashboard.schemaVersion >= 36 && dashboard.schemaVersion <= 41, `schemaVersion ${dashboard.schemaVersion}`);
    const vars = Object.fromEntries(dashboard.templating.list.map((v) => [v.name, v]));
    assert.equal(vars.DS_PROMETHEUS.type, 'datasource');
    assert.equal(vars.DS_PROMETHEUS.query, 'prometheus');
    for (const name of ['job', 'instance']) {
      assert.equal(vars[name].type, 'query');
      assert.deepEqual(vars[name].datasource, { type: 'prometheus', uid: '${DS_PROMETHEUS}' });
    }
    const panels = allPanels(dashboard);
    const ids = panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    for (const p of panels) {
      assert.ok(p.gridPos && p.gridPos.w > 0 && p.gridPos.x + p.gridPos.w <= 24, `panel ${p.id} gridPos`);
      if (p.type === 'row') continue;
      assert.deepEqual(p.datasource, { type: 'prometheus', uid: '${DS_PROMETHEUS}' }, `panel ${p.id} datasource`);
      assert.ok(p.targets && p.targets.length > 0, `panel ${p.id} "${p.title}" has no query`);
      for (const t of p.targets) {
        assert.deepEqual(t.datasource, { type: 'prometheus', uid: '${DS_PROMETHEUS}' }, `panel ${p.id} ${t.refId}`);
        // Every series is filtered to the chosen job and instance.
        for (const m of t.expr.matchAll(/\b([a-z_:][a-z0-9_:]*)\{([^}]*)\}/g)) {
          assert.match(m[2], /job=~"\$job",instance=~"\$instance"/, `panel ${p.id} ${t.refId}: ${m[1]} not filtered by $job/$instance`);
        }
      }
    }
  });

  it('shows every uvscope metric family, and selects only series uvscope exports', () => {
    const exported = exportedNames();
    const used = new Set();
    for (const { where, expr } of expressions(dashboard)) {
      const names = metricNames(substitute(expr));
      assert.ok(names.length > 0, `${where}: no metric in ${expr}`);
      for (const name of names) {
        assert.ok(exported.has(name), `${where}: ${name} is not a metric uvscope exports (${expr})`);
        used.add(name);
      }
    }
    const families = (n) => n.replace(/_(bucket|sum|count)$/, '');
    const wanted = ['nodejs_uv_handles_active', 'nodejs_uv_requests_active', 'nodejs_uv_threadpool_size',
      'nodejs_uv_threadpool_dns_slots', 'nodejs_uv_threadpool_pending', 'nodejs_uv_threadpool_queued',
      'nodejs_uv_threadpool_queue_wait_seconds', 'uvscope_probe_in_flight', 'nodejs_eventloop_delay_seconds',
      'nodejs_eventloop_delay_p99_seconds', 'nodejs_eventloop_utilization', 'dns_lookup_duration_seconds', 'uvscope_errors_total',
      'nodejs_net_connect_duration_seconds', 'nodejs_http_client_requests_total', 'v8js_memory_heap_limit_bytes',
      'nodejs_memory_constrained_bytes', 'v8js_gc_duration_seconds', 'nodejs_uv_threadpool_job_duration_seconds',
      'nodejs_uv_threadpool_busy', 'uvscope_tracer_armed'];
    const shown = new Set([...used].map(families));
    for (const w of wanted) assert.ok(shown.has(w), `no panel shows ${w}`);
  });

  it('shows the pool held by work other than DNS: the work probe, pending by kind against the pool size, jobs by kind and type', () => {
    const exprs = allPanels(dashboard).flatMap((p) => (p.targets || []).map((t) => t.expr));
    assert.ok(exprs.some((e) => /nodejs_uv_threadpool_queue_wait_seconds_sum\{[^}]*\}\[\$__rate_interval\]\)\) \/ \(sum by \(instance, queue\)/.test(e)), 'a mean probe wait by queue');
    assert.ok(exprs.some((e) => /^sum by \(instance, kind\) \(nodejs_uv_threadpool_pending\{/.test(e)), 'pending by kind');
    assert.ok(exprs.some((e) => /by \(instance, kind, type\) \(rate\(nodejs_uv_threadpool_job_duration_seconds_sum/.test(e)), 'job time by kind and type');
    assert.ok(exprs.some((e) => /by \(instance, kind, type, le\) \(rate\(nodejs_uv_threadpool_job_duration_seconds_bucket/.test(e)), 'job p99 by kind and type');
  });

  it('metricNames() finds the selected series and nothing else', () => {
    assert.deepEqual(metricNames('histogram_quantile(0.99, sum by (le, dns_question_name) (rate(dns_lookup_duration_seconds_bucket{job=~".+",le=~"6|6.0"}[1m])))'), ['dns_lookup_duration_seconds_bucket']);
    assert.deepEqual(metricNames('sum(increase(uvscope_errors_total[1h] offset 5m)) or vector(0)'), ['uvscope_errors_total']);
    assert.deepEqual(metricNames('a / on (instance) group_left (kind) b > 1e3 and c_d:e'), ['a', 'b', 'c_d:e']);
  });

  describe('is valid PromQL for a real Prometheus', function () {
    let prom;
    before(function () {
      requirePrometheus(this);
    });
    after(async () => {
      if (prom) await prom.close();
    });

    it('every expression, with the template variables substituted, is accepted by the query API', async function () {
      this.timeout(30000);
      // Nothing listens on the target: the queries only need to parse and evaluate.
      prom = await startPrometheus({ targets: [`127.0.0.1:${await freePort()}`] });
      const failures = [];
      for (const { where, expr } of expressions(dashboard)) {
        try {
          await prom.query(substitute(expr));
        } catch (err) {
          failures.push(`${where}: ${err.message}`);
        }
      }
      assert.deepEqual(failures, []);
      // The check is real: a broken expression is refused with bad_data.
      await assert.rejects(prom.query('sum by (instance (nodejs_uv_threadpool_size)'), /bad_data/);
    });
  });
});
