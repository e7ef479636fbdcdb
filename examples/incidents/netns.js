'use strict';
// A network namespace of its own (unshare -n, loopback up), for the accept-queue incident and its
// tests: /proc/net/netstat's counters are per namespace, so in one of its own they count only
// the traffic it runs there, however many other processes share the machine's. Needs root,
// unshare and ip; netnsSupport() says why not.
const fs = require('fs');
const path = require('path');
const { spawn, spawnSync } = require('child_process');

let cached = null;

/** Whether a child can run in a network namespace of its own here, and if not, why (cached). */
function netnsSupport() {
  if (cached) return { ...cached };
  if (process.platform !== 'linux') cached = { ok: false, reason: `platform is ${process.platform}: network namespaces are Linux's` };
  else if (typeof process.getuid !== 'function' || process.getuid() !== 0) cached = { ok: false, reason: 'not root: unshare -n needs uid 0' };
  else {
    const r = spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up && cat /proc/net/netstat >/dev/null'], { encoding: 'utf8', timeout: 10000 });
    cached = r.status === 0 ? { ok: true, reason: 'unshare -n with loopback up works' } : { ok: false, reason: `\`unshare -n\` + \`ip link set lo up\` failed: ${(r.stderr || (r.error && r.error.message) || `status ${r.status}`).trim()}` };
  }
  return { ...cached };
}

/**
 * Run `node script` in a network namespace of its own with loopback up; resolves with the JSON of
 * its last stdout line. Killed (SIGKILL, by pid) after timeoutMs.
 * @param {string} script
 * @param {object} env merged over process.env minus NODE_OPTIONS
 * @param {number} [timeoutMs]
 */
function runInNetns(script, env, timeoutMs = 120000) {
  const base = { ...process.env };
  delete base.NODE_OPTIONS;
  return new Promise((resolve, reject) => {
    const child = spawn('unshare', ['-n', 'sh', '-c', 'ip link set lo up && exec "$@"', 'uvscope-netns', process.execPath, script], {
      env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { err += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const last = out.trim().split('\n').pop();
      try {
        if (code !== 0) throw new Error(`exit ${code} ${signal || ''}`);
        resolve(JSON.parse(last));
      } catch (e) {
        reject(new Error(`${path.basename(script)}: ${e.message}\nstdout: ${out.slice(-2000)}\nstderr: ${err.slice(-2000)}`));
      }
    });
  });
}

/** This namespace's TcpExt counters of /proc/net/netstat, read plainly (a test's ground truth). */
function readNetstat() {
  const lines = fs.readFileSync('/proc/net/netstat', 'utf8').split('\n').filter((l) => l.startsWith('TcpExt:'));
  const names = lines[0].split(' ').slice(1);
  const values = lines[1].split(' ').slice(1).map(Number);
  return Object.fromEntries(names.map((n, i) => [n, values[i]]));
}

module.exports = { netnsSupport, runInNetns, readNetstat };
