'use strict';

const { freePort, stopChild } = require('./child');

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const INSTALL_HINT = 'install with `apt-get install prometheus` (Debian/Ubuntu; the package ships both prometheus and promtool)';
const MAX_LOG_BYTES = 256 * 1024;

let supportCache = null;
let skipReasonPrinted = false;
const running = new Set();

// A crashed or interrupted test run must not leave Prometheus servers behind.
process.on('exit', () => {
  for (const child of running) {
    try { process.kill(child.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
});

function findExecutable(name) {
  const dirs = (process.env.PATH || '').split(path.delimiter).filter(Boolean);
  for (const extra of ['/usr/bin', '/usr/local/bin']) {
    if (!dirs.includes(extra)) dirs.push(extra);
  }
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch { /* not here */ }
  }
  return null;
}

/**
 * Locate the prometheus and promtool binaries (PATH, then /usr/bin). Cached.
 * @returns {{ ok: boolean, reason: string|null, prometheus: string|null, promtool: string|null }}
 */
function prometheusSupport() {
  if (supportCache) return supportCache;
  const prometheus = findExecutable('prometheus');
  const promtool = findExecutable('promtool');
  const missing = [];
  if (!prometheus) missing.push('prometheus');
  if (!promtool) missing.push('promtool');
  const reason = missing.length === 0
    ? null
    : `${missing.join(' and ')} not found on PATH, in /usr/bin or /usr/local/bin; ${INSTALL_HINT}`;
  supportCache = { ok: missing.length === 0, reason, prometheus, promtool };
  return supportCache;
}

function ciIsSet() {
  const ci = process.env.CI;
  return Boolean(ci) && ci !== '0' && ci.toLowerCase() !== 'false';
}

/**
 * Skip the current mocha test/suite when Prometheus is unavailable; in CI (CI env set) fail instead.
 * Call as `before(function () { requirePrometheus(this); })`.
 * @param {Mocha.Context} mochaContext
 */
function requirePrometheus(mochaContext) {
  const support = prometheusSupport();
  if (support.ok) return;
  if (ciIsSet()) {
    throw new Error(`Prometheus is required in CI: ${support.reason}`);
  }
  if (!skipReasonPrinted) {
    skipReasonPrinted = true;
    console.warn(`[uvscope tests] skipping Prometheus tests: ${support.reason}`);
  }
  mochaContext.skip();
}

function runPromtool(args, input, timeoutMs = 30000) {
  const support = prometheusSupport();
  if (!support.promtool) return Promise.reject(new Error(support.reason));
  return new Promise((resolve, reject) => {
    const child = spawn(support.promtool, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    // promtool may exit before reading all of stdin (e.g. on a parse error).
    child.stdin.on('error', () => {});
    const timer = setTimeout(() => {
      try { process.kill(child.pid, 'SIGKILL'); } catch { /* already gone */ }
    }, timeoutMs);
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const output = Buffer.concat(chunks).toString('utf8');
      if (signal) {
        reject(new Error(`promtool ${args.join(' ')} killed by ${signal}\n${output}`));
        return;
      }
      resolve({ ok: code === 0, output });
    });
    child.stdin.end(input == null ? '' : input);
  });
}

/**
 * Lint Prometheus text exposition with `promtool check metrics` (text piped on stdin).
 * ok is false for lint findings (exit 3) and for parse errors (exit 1); output holds the messages.
 * @param {string} text
 * @returns {Promise<{ ok: boolean, output: string }>}
 */
function promtoolCheckMetrics(text) {
  return runPromtool(['check', 'metrics'], text);
}

/**
 * Run `promtool test rules <testFile>`.
 * @param {string} testFile path to a rule unit-test YAML file
 * @returns {Promise<{ ok: boolean, output: string }>}
 */
function promtoolTestRules(testFile) {
  return runPromtool(['test', 'rules', testFile], null, 60000);
}

function httpGet(url, timeoutMs = 5000) {
  return new Promise((resolve, reject) => {
    // Plain http (not fetch) so proxy env vars can never redirect 127.0.0.1 traffic.
    const req = http.get(url, { agent: false, timeout: timeoutMs }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

async function apiGet(baseUrl, pathAndQuery) {
  const { status, body } = await httpGet(baseUrl + pathAndQuery);
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new Error(`GET ${pathAndQuery}: HTTP ${status}, non-JSON body: ${body.slice(0, 500)}`);
  }
  if (parsed.status !== 'success') {
    throw new Error(`GET ${pathAndQuery}: HTTP ${status}, ${parsed.errorType || 'error'}: ${parsed.error || body.slice(0, 500)}`);
  }
  return parsed.data;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function toDuration(ms) {
  if (!Number.isInteger(ms) || ms <= 0) throw new TypeError(`interval must be a positive integer of ms, got ${ms}`);
  return `${ms}ms`;
}

async function launch(binary, opts, port) {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'uvscope-prom-'));
  const configFile = path.join(dir, 'prometheus.yml');
  // JSON is valid YAML, so no YAML serializer (or escaping) is needed.
  const config = {
    global: {
      scrape_interval: toDuration(opts.scrapeIntervalMs),
      scrape_timeout: toDuration(Math.min(opts.scrapeIntervalMs, 10000)),
      evaluation_interval: toDuration(opts.evaluationIntervalMs),
    },
    rule_files: opts.ruleFiles.map((f) => path.resolve(f)),
    scrape_configs: [{
      job_name: opts.jobName,
      static_configs: [{ targets: opts.targets }],
    }],
  };
  await fsp.writeFile(configFile, JSON.stringify(config, null, 2));

  const url = `http://127.0.0.1:${port}`;
  // No alerting/remote_write sections and no lifecycle/admin APIs: nothing leaves 127.0.0.1.
  const args = [
    `--config.file=${configFile}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--storage.tsdb.retention.time=1h',
    '--log.level=info',
  ];
  const child = spawn(binary, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);

  let log = '';
  const capture = (c) => {
    log += c.toString('utf8');
    if (log.length > MAX_LOG_BYTES) log = log.slice(-MAX_LOG_BYTES);
  };
  child.stdout.on('data', capture);
  child.stderr.on('data', capture);

  let exitInfo = null;
  const exited = new Promise((resolve) => {
    child.on('error', (err) => { exitInfo = exitInfo || { err }; running.delete(child); resolve(exitInfo); });
    child.on('close', (code, signal) => { exitInfo = exitInfo || { code, signal }; running.delete(child); resolve(exitInfo); });
  });

  return { dir, url, child, exited, getLog: () => log, getExit: () => exitInfo };
}

async function terminate(inst, graceMs = 5000) {
  if (!inst.getExit()) {
    await stopChild(inst.child, { signal: 'SIGTERM', graceMs });
    await inst.exited;
  }
  await fsp.rm(inst.dir, { recursive: true, force: true });
}

function describeExit(info) {
  if (info.err) return `failed to spawn: ${info.err.message}`;
  return info.signal ? `was killed by ${info.signal}` : `exited with code ${info.code}`;
}

async function waitReady(inst, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let lastError = null;
  while (Date.now() < deadline) {
    if (inst.getExit()) {
      throw new Error(`prometheus ${describeExit(inst.getExit())} before becoming ready:\n${inst.getLog()}`);
    }
    try {
      const { status } = await httpGet(`${inst.url}/-/ready`, 1000);
      if (status === 200) return;
      lastError = `HTTP ${status}`;
    } catch (err) {
      lastError = err.message;
    }
    await Promise.race([sleep(50), inst.exited]);
  }
  throw new Error(`prometheus not ready after ${timeoutMs} ms (last: ${lastError}):\n${inst.getLog()}`);
}

/**
 * Start a throw-away Prometheus on 127.0.0.1 with a temp config and TSDB, scraping `targets`.
 * Resolves once /-/ready answers 200; rejects with Prometheus' log if it exits or never gets ready.
 * Note: Prometheus 2.42 applies scrape targets ~5 s after start (discovery/scrape reload throttle),
 * so the first sample appears ~5 s + up to one scrape interval after start.
 * @param {object} [options]
 * @param {string[]} [options.targets=['127.0.0.1:9464']] host:port scrape targets (path /metrics)
 * @param {number} [options.scrapeIntervalMs=1000]
 * @param {string[]} [options.ruleFiles=[]] rule files (resolved to absolute paths)
 * @param {number} [options.evaluationIntervalMs=1000]
 * @param {string} [options.jobName='uvscope']
 * @param {number} [options.readyTimeoutMs=15000]
 * @returns {Promise<{ url: string, pid: number,
 *   query: (expr: string) => Promise<any[]>,
 *   waitFor: (expr: string, predicate: (result: any[]) => boolean, timeoutMs?: number) => Promise<any[]>,
 *   alerts: () => Promise<any[]>, logs: () => string, close: () => Promise<void> }>}
 */
async function startPrometheus(options = {}) {
  const support = prometheusSupport();
  if (!support.prometheus) throw new Error(support.reason);
  const opts = {
    targets: ['127.0.0.1:9464'],
    scrapeIntervalMs: 1000,
    ruleFiles: [],
    evaluationIntervalMs: 1000,
    jobName: 'uvscope',
    readyTimeoutMs: 15000,
    ...options,
  };

  let inst;
  // freePort() can race with other processes grabbing the port; retry on bind failure only.
  for (let attempt = 1; ; attempt++) {
    inst = await launch(support.prometheus, opts, await freePort());
    try {
      await waitReady(inst, opts.readyTimeoutMs);
      break;
    } catch (err) {
      await terminate(inst);
      if (attempt < 3 && /address already in use/.test(inst.getLog())) continue;
      throw err;
    }
  }

  const { url } = inst;
  const query = async (expr) => {
    const data = await apiGet(url, `/api/v1/query?query=${encodeURIComponent(expr)}`);
    return data.result;
  };

  let closing = null;
  return {
    url,
    pid: inst.child.pid,
    query,
    async waitFor(expr, predicate, timeoutMs = 20000) {
      const deadline = Date.now() + timeoutMs;
      let last;
      let lastError;
      for (;;) {
        try {
          last = await query(expr);
          lastError = null;
          if (predicate(last)) return last;
        } catch (err) {
          lastError = err;
        }
        if (inst.getExit()) {
          throw new Error(`prometheus ${describeExit(inst.getExit())} while waiting for ${expr}:\n${inst.getLog()}`);
        }
        if (Date.now() >= deadline) {
          const detail = lastError ? `last error: ${lastError.message}` : `last result: ${JSON.stringify(last)}`;
          throw new Error(`waitFor(${expr}) timed out after ${timeoutMs} ms; ${detail}`);
        }
        await sleep(200);
      }
    },
    async alerts() {
      const data = await apiGet(url, '/api/v1/alerts');
      return data.alerts;
    },
    logs: () => inst.getLog(),
    close() {
      if (!closing) closing = terminate(inst);
      return closing;
    },
  };
}

module.exports = {
  prometheusSupport,
  requirePrometheus,
  promtoolCheckMetrics,
  promtoolTestRules,
  startPrometheus,
};
