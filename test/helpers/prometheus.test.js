'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs/promises');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const {
  prometheusSupport,
  requirePrometheus,
  promtoolCheckMetrics,
  startPrometheus,
} = require('./prometheus');

const VALID_EXPOSITION = [
  '# HELP demo_value A demo gauge.',
  '# TYPE demo_value gauge',
  'demo_value 42',
  '',
].join('\n');

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('test/helpers/prometheus', function () {
  this.timeout(30000);

  before(function () {
    requirePrometheus(this);
  });

  it('prometheusSupport() finds both binaries and is cached', function () {
    const support = prometheusSupport();
    assert.equal(support.ok, true);
    assert.equal(support.reason, null);
    assert.match(support.prometheus, /prometheus$/);
    assert.match(support.promtool, /promtool$/);
    assert.equal(prometheusSupport(), support);
  });

  describe('promtoolCheckMetrics', function () {
    it('accepts a valid gauge exposition', async function () {
      const { ok, output } = await promtoolCheckMetrics(VALID_EXPOSITION);
      assert.equal(ok, true, output);
      assert.equal(output.trim(), '');
    });

    it('flags a counter without the _total suffix', async function () {
      const text = '# HELP demo_requests Requests.\n# TYPE demo_requests counter\ndemo_requests 1\n';
      const { ok, output } = await promtoolCheckMetrics(text);
      assert.equal(ok, false);
      assert.match(output, /demo_requests counter metrics should have "_total" suffix/);
    });

    it('flags a metric without HELP text', async function () {
      const { ok, output } = await promtoolCheckMetrics('# TYPE demo_value gauge\ndemo_value 42\n');
      assert.equal(ok, false);
      assert.match(output, /demo_value no help text/);
    });

    it('flags unparsable exposition', async function () {
      const { ok, output } = await promtoolCheckMetrics('demo_value{ 42\n');
      assert.equal(ok, false);
      assert.match(output, /text format parsing error/);
    });
  });

  describe('startPrometheus', function () {
    let target;
    let prom;

    before(async function () {
      target = http.createServer((req, res) => {
        if (req.url !== '/metrics') {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
        res.end(VALID_EXPOSITION);
      });
      await new Promise((resolve) => target.listen(0, '127.0.0.1', resolve));
      prom = await startPrometheus({ targets: [`127.0.0.1:${target.address().port}`] });
    });

    after(async function () {
      if (prom) await prom.close();
      if (target) {
        target.closeAllConnections();
        await new Promise((resolve) => target.close(resolve));
      }
    });

    it('listens on 127.0.0.1 and reports its pid', function () {
      assert.match(prom.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.ok(Number.isInteger(prom.pid) && isAlive(prom.pid));
    });

    it('scrapes the target so waitFor() sees demo_value 42', async function () {
      const result = await prom.waitFor(
        'demo_value',
        (r) => r.length === 1 && r[0].value[1] === '42',
        20000,
      );
      assert.equal(result[0].metric.__name__, 'demo_value');
      assert.equal(result[0].metric.job, 'uvscope');
      assert.equal(result[0].metric.instance, `127.0.0.1:${target.address().port}`);
      const up = await prom.query('up');
      assert.equal(up.length, 1);
      assert.equal(up[0].value[1], '1');
    });

    it('alerts() is empty without rule files', async function () {
      assert.deepEqual(await prom.alerts(), []);
    });

    it('query() rejects with the API error for bad PromQL', async function () {
      await assert.rejects(prom.query('sum('), /bad_data/);
    });

    it('close() stops the process by pid and is idempotent', async function () {
      const { pid } = prom;
      await prom.close();
      assert.equal(isAlive(pid), false);
      await prom.close();
    });
  });

  it('startPrometheus() rejects with Prometheus\' log when it exits early', async function () {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'uvscope-prom-test-'));
    try {
      const rules = path.join(dir, 'broken.rules.yml');
      await fs.writeFile(rules, 'groups:\n  - name: broken\n    rules:\n      - alert: Broken\n        expr: "up =="\n');
      await assert.rejects(
        startPrometheus({ targets: ['127.0.0.1:1'], ruleFiles: [rules] }),
        (err) => {
          assert.match(err.message, /exited with code 1 before becoming ready/);
          assert.match(err.message, /broken\.rules\.yml/);
          return true;
        },
      );
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
