'use strict';

const assert = require('node:assert/strict');
const { resolveOptions, DEFAULTS } = require('../lib/options');

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
    assert.equal(d.prometheus.aggregate, true);
    assert.equal(d.prometheus.maxProcesses, 128);
    assert.equal(d.prometheus.processTtlMs, undefined, '3 of each process\'s intervals');
    const o = resolveOptions({ prometheus: { maxProcesses: 8 } }, { UVSCOPE_PROMETHEUS_AGGREGATE: 'off', UVSCOPE_PROMETHEUS_PROCESS_TTL_MS: '30000' });
    assert.deepEqual([o.prometheus.aggregate, o.prometheus.maxProcesses, o.prometheus.processTtlMs], [false, 8, 30000]);
    const warnings = [];
    const onWarning = (w) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const bad = resolveOptions({}, { UVSCOPE_PROMETHEUS_AGGREGATE: 'maybe', UVSCOPE_PROMETHEUS_MAX_PROCESSES: '0', UVSCOPE_PROMETHEUS_PROCESS_TTL_MS: '5' });
      await new Promise((r) => setImmediate(r));
      assert.deepEqual([bad.prometheus.aggregate, bad.prometheus.maxProcesses, bad.prometheus.processTtlMs], [true, 128, undefined]);
      const texts = warnings.filter((w) => w.code === 'UVSCOPE_INVALID_OPTION').map((w) => w.message).sort();
      assert.equal(texts.length, 3);
      assert.match(texts[0], /^uvscope: UVSCOPE_PROMETHEUS_AGGREGATE="maybe" is not valid: expected true\/false.*; using true$/);
      assert.match(texts[1], /^uvscope: UVSCOPE_PROMETHEUS_MAX_PROCESSES="0" is not valid: expected an integer from 1 to 4096; using 128$/);
      assert.match(texts[2], /^uvscope: UVSCOPE_PROMETHEUS_PROCESS_TTL_MS="5" is not valid: expected an integer number of milliseconds from 1000 to 86400000 \(default: 3 sampling intervals of that process\)$/);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
