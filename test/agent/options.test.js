'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { resolveOptions, readSetting, envName, childEnvironment, DEFAULTS, SETTINGS } = require('../../lib/agent/options');
const { ROOT, shippedFiles, collectWarnings: warnings } = require('../helpers/source');

describe('options', () => {
  it('defaults, then the environment, then start(options), which wins', () => {
    assert.equal(resolveOptions({}, {}).prometheus.port, DEFAULTS.prometheus.port);
    assert.equal(resolveOptions({}, { UVSCOPE_PROMETHEUS_PORT: '9999' }).prometheus.port, 9999);
    assert.equal(resolveOptions({ prometheus: { port: 1234 } }, { UVSCOPE_PROMETHEUS_PORT: '9999' }).prometheus.port, 1234);
    assert.deepEqual(resolveOptions({}, { UVSCOPE_EXPORTERS: ' Prometheus , prometheus ' }).exporters, ['prometheus']);
    assert.deepEqual(resolveOptions({}, { UVSCOPE_EXPORTERS: 'none' }).exporters, []);
    assert.equal(resolveOptions({}, { UVSCOPE_DISABLED: 'yes' }).disabled, true);
    assert.equal(resolveOptions({}, { UVSCOPE_INTERVAL_MS: '' }).intervalMs, 1000, 'empty means unset');
  });

  it('resolved options are frozen all the way down', () => {
    const o = resolveOptions({}, {});
    assert.ok(Object.isFrozen(o) && Object.isFrozen(o.prometheus) && Object.isFrozen(o.dns) && Object.isFrozen(o.exporters));
  });

  it('a bad value keeps the default and warns once per setting, naming it, the value and what is accepted', async () => {
    const warnings = [];
    const onWarning = (w) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const o = resolveOptions({ intervalMs: 5 }, { UVSCOPE_PROMETHEUS_PORT: '70000', UVSCOPE_DNS_MAX_NAMES: 'lots' });
      resolveOptions({}, { UVSCOPE_PROMETHEUS_PORT: '70000' }); // same problem again: no second warning
      await new Promise((r) => setImmediate(r));
      assert.equal(o.intervalMs, 1000);
      assert.equal(o.prometheus.port, 9464);
      assert.equal(o.dns.maxNames, 100);
      const texts = warnings.filter((w) => w.code === 'UVSCOPE_INVALID_OPTION').map((w) => w.message);
      assert.deepEqual(texts.sort(), [
        'uvscope: UVSCOPE_DNS_MAX_NAMES="lots" is not valid: expected an integer from 1 to 100000; using 100',
        'uvscope: UVSCOPE_PROMETHEUS_PORT="70000" is not valid: expected an integer port from 0 to 65535; using 9464',
        'uvscope: options.intervalMs=5 is not valid: expected an integer number of milliseconds from 50 to 3600000; using 1000',
      ]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('multi-process settings: on by default, bounded, and a bad value warns and keeps the default', async () => {
    const d = resolveOptions({}, {});
    assert.equal(d.multiprocess.aggregate, true);
    assert.equal(d.multiprocess.maxProcesses, 128);
    assert.equal(d.multiprocess.ttlMs, undefined, '3 of each process\'s intervals');
    const o = resolveOptions({ multiprocess: { maxProcesses: 8 } }, { UVSCOPE_MULTIPROCESS: 'off', UVSCOPE_MULTIPROCESS_TTL_MS: '30000' });
    assert.deepEqual([o.multiprocess.aggregate, o.multiprocess.maxProcesses, o.multiprocess.ttlMs], [false, 8, 30000]);
    const warnings = [];
    const onWarning = (w) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const bad = resolveOptions({}, { UVSCOPE_MULTIPROCESS: 'maybe', UVSCOPE_MULTIPROCESS_MAX_PROCESSES: '0', UVSCOPE_MULTIPROCESS_TTL_MS: '5' });
      await new Promise((r) => setImmediate(r));
      assert.deepEqual([bad.multiprocess.aggregate, bad.multiprocess.maxProcesses, bad.multiprocess.ttlMs], [true, 128, undefined]);
      const texts = warnings.filter((w) => w.code === 'UVSCOPE_INVALID_OPTION').map((w) => w.message).sort();
      assert.equal(texts.length, 3);
      assert.match(texts[0], /^uvscope: UVSCOPE_MULTIPROCESS="maybe" is not valid: expected true\/false.*; using true$/);
      assert.match(texts[1], /^uvscope: UVSCOPE_MULTIPROCESS_MAX_PROCESSES="0" is not valid: expected an integer from 1 to 4096; using 128$/);
      assert.match(texts[2], /^uvscope: UVSCOPE_MULTIPROCESS_TTL_MS="5" is not valid: expected an integer number of milliseconds from 1000 to 86400000 \(default: 3 sampling intervals of that process\)$/);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('settings read late come from the environment when asked, parsed by the same table: UV_THREADPOOL_SIZE as libuv reads it', () => {
    assert.equal(readSetting('threadpool.size', {}), 4);
    assert.equal(readSetting('threadpool.size', { UV_THREADPOOL_SIZE: '' }), 1, 'libuv: atoi("") is 0, and 0 becomes 1');
    assert.equal(readSetting('threadpool.size', { UV_THREADPOOL_SIZE: '64' }), 64);
    assert.equal(readSetting('threadpool.size', { UV_THREADPOOL_SIZE: '5000' }), 1024);
    assert.equal(readSetting('resolver.localDomain', { LOCALDOMAIN: 'svc.test' }), 'svc.test');
    assert.equal(readSetting('resolver.options', {}), undefined);
    const o = resolveOptions({ threadpool: { size: 8 } }, { UV_THREADPOOL_SIZE: '8' });
    assert.equal(o.threadpool, undefined, 'late settings are not options of start()');
    assert.throws(() => readSetting('no.such.setting', {}), /no setting no\.such\.setting/);
  });

  it('DD_RUNTIME_METRICS_ENABLED is one more boolean: a bad value warns once, naming it, and counts as false', () => {
    assert.equal(readSetting('datadog.runtimeMetrics', {}), false);
    assert.equal(readSetting('datadog.runtimeMetrics', { DD_RUNTIME_METRICS_ENABLED: 'On' }), true);
    const { result, seen } = warnings(() => readSetting('datadog.runtimeMetrics', { DD_RUNTIME_METRICS_ENABLED: 'maybe' }));
    assert.equal(result, false);
    assert.deepEqual(seen, [{
      code: 'UVSCOPE_INVALID_OPTION',
      message: 'uvscope: DD_RUNTIME_METRICS_ENABLED="maybe" is not valid: expected true/false, 1/0, yes/no, on/off; using false',
    }]);
  });

  it('every boolean setting accepts the same words', () => {
    const booleans = ['disabled', 'reportOnExit', 'datadog.traceTags'];
    for (const p of booleans) {
      const row = SETTINGS.find((s) => s.path === p);
      for (const [word, want] of [['on', true], ['No', false], ['1', true], ['false', false]]) assert.equal(row.parse(word), want, `${p}=${word}`);
    }
    assert.equal(resolveOptions({}, { UVSCOPE_DATADOG_EVENT_LOOP: 'off' }).datadog.eventLoop, false);
    assert.equal(resolveOptions({}, { UVSCOPE_OTLP_RUNTIME_METRICS: 'yes' }).otlp.runtimeMetrics, 'on');
  });

  it('the CLI gets variable names and its child environment from here', () => {
    assert.equal(envName('prometheus.port'), 'UVSCOPE_PROMETHEUS_PORT');
    assert.equal(envName('datadog.host'), 'DD_DOGSTATSD_HOST');
    assert.deepEqual(childEnvironment({ B: '2' }, { A: '1', B: '1' }), { A: '1', B: '2' });
  });

  it('every row takes its parser from lib/settings/parsers.js (one per type), none written inline', () => {
    // Rows are declared where they are used (lib/core/setting.js setting()), one line each.
    const rows = shippedFiles().filter((f) => f !== path.join('lib', 'core', 'setting.js'))
      .flatMap((f) => fs.readFileSync(path.join(ROOT, f), 'utf8').split('\n'))
      .filter((l) => /(^|[\s=(,[])setting\(/.test(l) && !/^\s*(\/\/|\*)/.test(l));
    assert.equal(rows.length, SETTINGS.length, 'one setting( line per row');
    assert.deepEqual(rows.filter((l) => /=>/.test(l)), []);
  });

  it('each setting is declared once: one row per path, one row per variable', () => {
    assert.equal(new Set(SETTINGS.map((s) => s.path)).size, SETTINGS.length);
    const variables = SETTINGS.flatMap((s) => s.env);
    assert.equal(new Set(variables).size, variables.length);
  });

  it('nothing but lib/core/setting.js reads process.env', () => {
    const readers = shippedFiles().filter((f) => f !== path.join('lib', 'core', 'setting.js'))
      .filter((f) => /process\.env\b/.test(fs.readFileSync(path.join(ROOT, f), 'utf8').replace(/^\s*(\/\/|\*).*$/gm, '')));
    assert.deepEqual(readers, []);
  });

  it('settings tables in README.md and docs/ name each variable with its option and its true default', () => {
    const defaultOf = (row) => (row.late ? row.default : row.path.split('.').reduce((c, k) => (c == null ? undefined : c[k]), DEFAULTS));
    assert.deepEqual(SETTINGS.filter((row) => row.default !== defaultOf(row)).map((row) => row.path), [], 'DEFAULTS are the rows\' defaults');
    const shown = (v) => (v === undefined || (Array.isArray(v) && v.length === 0) ? 'none' : `\`${[].concat(v).join(',')}\``);
    let checked = 0;
    for (const file of ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).map((f) => path.join('docs', f))]) {
      for (const line of fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n')) {
        // | `VARIABLE` | `option.path` | default | accepted |
        const cells = line.split(' | ');
        const variable = /^\| `([A-Z][A-Z0-9_]*)`$/.exec(cells[0]);
        const option = cells.length >= 4 && /^`([a-z][A-Za-z.]*)`$/.exec(cells[1]);
        if (!variable || !option) continue;
        const row = SETTINGS.find((s) => s.path === option[1]);
        assert.ok(row, `${file}: ${option[1]} is not a setting`);
        assert.ok(row.env.includes(variable[1]), `${file}: ${option[1]} is not read from ${variable[1]}`);
        assert.equal(cells[2], shown(defaultOf(row)), `${file}: the default of ${variable[1]}`);
        checked++;
      }
    }
    assert.ok(checked >= 20, `${checked} rows checked`);
  });

  it('every variable in the table is documented in README.md or docs/', () => {
    const docs = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).map((f) => path.join('docs', f))]
      .map((f) => fs.readFileSync(path.join(ROOT, f), 'utf8')).join('\n');
    const missing = SETTINGS.flatMap((s) => s.env).filter((name) => !docs.includes(name));
    assert.deepEqual(missing, []);
  });
});
