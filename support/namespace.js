'use strict';

// Children with a private /etc/resolv.conf (and /etc/hosts): a mount namespace of their own, so a
// test or the lab can point getaddrinfo at a DNS server it runs on a loopback address without
// touching the machine's files. Shared by the tests (test/helpers/namespace.js adds the mocha
// hook) and the incident lab (examples/incidents/).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

// `sh -c SCRIPT uvscope-ns FILE... cmd args...`: the bind mounts live only in the
// private mount namespace unshare created; `exec` makes the spawned pid the command itself.
const SCRIPT_RESOLV = 'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"';
const SCRIPT_RESOLV_HOSTS =
  'mount --bind "$1" /etc/resolv.conf && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"';
const SH_NAME = 'uvscope-ns';

const liveDirs = new Set();
let exitHookInstalled = false;
let cachedSupport = null;

function removeDir(dir) {
  liveDirs.delete(dir);
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch {
    // best effort: a leftover temp dir must not fail a test
  }
}

function makeTempDir() {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // If the test process dies before its children exit, still clean up.
    process.once('exit', () => {
      for (const dir of [...liveDirs]) removeDir(dir);
    });
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-ns-'));
  liveDirs.add(dir);
  return dir;
}

function findInPath(bin) {
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, bin);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // keep looking
    }
  }
  return null;
}

function probe() {
  if (process.platform !== 'linux') {
    return { ok: false, reason: `platform is ${process.platform}, mount namespaces need linux` };
  }
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    const uid = typeof process.getuid === 'function' ? process.getuid() : 'unknown';
    return { ok: false, reason: `not running as root (uid ${uid}); mount --bind needs uid 0` };
  }
  for (const bin of ['unshare', 'mount', 'sh']) {
    if (!findInPath(bin)) return { ok: false, reason: `\`${bin}\` not found in PATH` };
  }
  if (!fs.existsSync('/etc/resolv.conf')) {
    return { ok: false, reason: '/etc/resolv.conf does not exist, so there is nothing to bind-mount over' };
  }
  const dir = makeTempDir();
  try {
    const file = path.join(dir, 'resolv.conf');
    const marker = `# uvscope namespace probe ${process.pid} ${Date.now()}\nnameserver 127.0.0.2\n`;
    fs.writeFileSync(file, marker);
    const r = spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c',
      'mount --bind "$0" /etc/resolv.conf && cat /etc/resolv.conf', file],
    { encoding: 'utf8', timeout: 10000, stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.error) return { ok: false, reason: `running unshare failed: ${r.error.message}` };
    if (r.status !== 0) {
      const why = (r.stderr || '').trim() || `exit status ${r.status}, signal ${r.signal}`;
      return { ok: false, reason: `\`unshare -m --propagation private\` + \`mount --bind\` failed: ${why}` };
    }
    if (r.stdout !== marker) {
      return { ok: false, reason: 'bind-mounted /etc/resolv.conf did not show the temp file content inside the namespace' };
    }
    return { ok: true, reason: 'private mount namespace with bind-mounted /etc/resolv.conf works' };
  } finally {
    removeDir(dir);
  }
}

/**
 * Whether children can be run with a private /etc/resolv.conf (cached).
 * @returns {{ok: boolean, reason: string}}
 */
function namespaceSupport() {
  if (!cachedSupport) cachedSupport = probe();
  return { ...cachedSupport };
}

/**
 * Builds resolv.conf content.
 * @param {object} [opts]
 * @param {string|string[]} [opts.nameserver='127.0.0.2'] IPs only; glibc always uses port 53
 * @param {number} [opts.timeout] seconds per try (`options timeout:N`)
 * @param {number} [opts.attempts] rounds over all servers (`options attempts:N`)
 * @param {string[]} [opts.options=[]] extra option words, e.g. ['single-request', 'edns0']
 * @param {string|string[]} [opts.search]
 * @param {number} [opts.ndots]
 * @returns {string}
 */
function resolvConf(opts = {}) {
  const { nameserver = '127.0.0.2', timeout, attempts, options = [], search, ndots } = opts;
  const lines = [];
  for (const ns of Array.isArray(nameserver) ? nameserver : [nameserver]) lines.push(`nameserver ${ns}`);
  if (search !== undefined) {
    const list = Array.isArray(search) ? search : [search];
    if (list.length) lines.push(`search ${list.join(' ')}`);
  }
  const words = [];
  if (timeout !== undefined) words.push(`timeout:${timeout}`);
  if (attempts !== undefined) words.push(`attempts:${attempts}`);
  if (ndots !== undefined) words.push(`ndots:${ndots}`);
  words.push(...options);
  if (words.length) lines.push(`options ${words.join(' ')}`);
  return `${lines.join('\n')}\n`;
}

function childEnv(env) {
  const base = { ...process.env };
  delete base.NODE_OPTIONS;
  return { ...base, ...(env || {}) };
}

/**
 * Spawns `command args` in a private mount namespace where /etc/resolv.conf
 * (and optionally /etc/hosts) are bind-mounted from temp files. The returned
 * child's pid is the command's own pid. Temp files are removed when it exits.
 * @param {object} opts
 * @param {string} opts.resolvConf resolv.conf content (see resolvConf())
 * @param {string} [opts.hosts] /etc/hosts content; the real one is kept if omitted
 * @param {string} [opts.command=process.execPath]
 * @param {string[]} [opts.args=[]]
 * @param {object} [opts.env] merged over process.env minus NODE_OPTIONS
 * @param {string} [opts.cwd]
 * @param {*} [opts.stdio] as for child_process.spawn
 * @returns {import('child_process').ChildProcess}
 */
function spawnInNamespace(opts) {
  const { resolvConf: content, hosts, command = process.execPath, args = [], env, cwd, stdio } = opts || {};
  if (typeof content !== 'string') throw new TypeError('spawnInNamespace: resolvConf (string) is required');
  const dir = makeTempDir();
  let child;
  try {
    const resolvFile = path.join(dir, 'resolv.conf');
    fs.writeFileSync(resolvFile, content);
    const shArgs = hosts === undefined
      ? ['-c', SCRIPT_RESOLV, SH_NAME, resolvFile]
      : ['-c', SCRIPT_RESOLV_HOSTS, SH_NAME, resolvFile, path.join(dir, 'hosts')];
    if (hosts !== undefined) fs.writeFileSync(path.join(dir, 'hosts'), hosts);
    child = spawn('unshare', ['-m', '--propagation', 'private', 'sh', ...shArgs, command, ...args], {
      env: childEnv(env),
      cwd,
      stdio,
    });
  } catch (err) {
    removeDir(dir);
    throw err;
  }
  const cleanup = () => removeDir(dir);
  child.once('exit', cleanup);
  child.once('error', cleanup);
  return child;
}

/**
 * spawnInNamespace() and collect the outcome. Kills the child (by pid, SIGKILL)
 * and rejects if it runs longer than timeoutMs.
 * @param {object} opts same as spawnInNamespace, plus:
 * @param {number} [opts.timeoutMs=30000]
 * @returns {Promise<{code: number|null, signal: string|null, stdout: string, stderr: string}>}
 */
function runInNamespace(opts = {}) {
  const { timeoutMs = 30000, ...rest } = opts;
  return new Promise((resolve, reject) => {
    let child;
    try {
      child = spawnInNamespace({ stdio: ['ignore', 'pipe', 'pipe'], ...rest });
    } catch (err) {
      reject(err);
      return;
    }
    let stdout = '';
    let stderr = '';
    let done = false;
    if (child.stdout) child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
    if (child.stderr) child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      try {
        if (child.pid) process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      reject(new Error(`runInNamespace: ${rest.command || process.execPath} (pid ${child.pid}) ` +
        `did not exit within ${timeoutMs} ms and was killed with SIGKILL.\n` +
        `stdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.once('error', (err) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

module.exports = {
  namespaceSupport,
  resolvConf,
  spawnInNamespace,
  runInNamespace,
};
