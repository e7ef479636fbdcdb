'use strict';

const { spawn } = require('child_process');
const path = require('path');
const { cleanEnv, freePort, stopChild } = require('../../support/processes');

const ROOT = path.resolve(__dirname, '..', '..');
const REGISTER = path.join(ROOT, 'register.js');
const FIXTURES = path.join(ROOT, 'test', 'fixtures');

// What the agent's findings engine says when a rule's quiet() held for a window on which its
// evaluate() fired (UVSCOPE_TEST_CHECK_QUIET, lib/core/faults.js).
const QUIET_LIED = /finding rule [a-z0-9-]+: quiet\(\) held for every summary of the window, yet evaluate\(\) fired/;

/**
 * Run node with args to completion; kill it by pid if it outlives timeoutMs. The agent in it
 * checks its rules' quiet() (UVSCOPE_TEST_CHECK_QUIET, unless env sets it): a check that fails
 * rejects, whatever the test asserts.
 * @returns {Promise<{code: number|null, signal: string|null, stdout: string, stderr: string, ms: number}>}
 */
function runNode(args, { env = {}, cwd = ROOT, timeoutMs = 30000, command = process.execPath } = {}) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(command, args, { env: cleanEnv({ UVSCOPE_TEST_CHECK_QUIET: 'true', ...env }), cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      process.kill(child.pid, 'SIGKILL');
      reject(new Error(`${args.join(' ')} did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const lied = QUIET_LIED.exec(stderr);
      if (lied) return reject(new Error(`${args.join(' ')}: ${lied[0]}\nstderr: ${stderr}`));
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** Parse the last line of stdout that is JSON. */
function lastJson(stdout) {
  const lines = stdout.trim().split('\n').filter((l) => l.startsWith('{') || l.startsWith('['));
  if (lines.length === 0) throw new Error(`no JSON in child output: ${stdout}`);
  return JSON.parse(lines[lines.length - 1]);
}

/**
 * Parse Prometheus text exposition into samples.
 * @param {string} text
 * @returns {{ name: string, labels: Record<string,string>, value: number }[]}
 */
function parsePrometheus(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable exposition line: ${line}`);
    const labels = {};
    if (m[2]) for (const [, k, v] of m[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/**
 * The value of one sample whose labels include the given ones (undefined if none).
 * @param {ReturnType<typeof parsePrometheus>} samples
 */
function sampleValue(samples, name, labels = {}) {
  const s = samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === String(v)));
  return s ? s.value : undefined;
}

/** GET http://127.0.0.1:port/metrics, retrying until it answers (or timeoutMs). */
async function scrape(port, { timeoutMs = 10000, host = '127.0.0.1' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(`http://${host}:${port}/metrics`);
      return { status: res.status, contentType: res.headers.get('content-type'), text: await res.text() };
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

module.exports = { ROOT, REGISTER, FIXTURES, cleanEnv, runNode, lastJson, freePort, stopChild, parsePrometheus, sampleValue, scrape };
