'use strict';

// Child processes for the tests, the lab (examples/) and the benchmarks (bench/): a clean
// environment, a free port, a server child's port, a child's output, and stopping children by pid.

const net = require('node:net');

/**
 * The parent's environment for a child, without NODE_OPTIONS (nothing inherited may load the
 * agent, or anything else, into it) and without the variables `drop` names (by default every
 * UVSCOPE_*), with `extra` on top.
 * @param {Record<string, string>} [extra]
 * @param {(name: string) => boolean} [drop]
 * @returns {Record<string, string>}
 */
function scrubEnv(extra = {}, drop = (k) => k.startsWith('UVSCOPE_')) {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  for (const k of Object.keys(env)) if (drop(k)) delete env[k];
  return { ...env, ...extra };
}

/**
 * Environment for a test's child: the parent's, without NODE_OPTIONS, UVSCOPE_* or
 * UV_THREADPOOL_SIZE leaking in, with `extra` on top. The snapshot's own server (on when
 * Prometheus is off) takes a free port unless `extra` names one, so children running at once
 * never compete for its default port.
 * @param {Record<string, string>} [extra]
 * @returns {Record<string, string>}
 */
function cleanEnv(extra = {}) {
  return scrubEnv({ UVSCOPE_SNAPSHOT_PORT: '0', ...extra }, (k) => k.startsWith('UVSCOPE_') || k === 'UV_THREADPOOL_SIZE');
}

/**
 * A free TCP port on 127.0.0.1 (listen on 0, close).
 * @returns {Promise<number>}
 */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Stop a child process by its pid and wait until it has exited. SIGKILL at once by default; with
 * a signal such as SIGTERM, SIGKILL follows after graceMs if the child is still there. A child
 * that already exited (or was never started) resolves at once.
 * @param {import('node:child_process').ChildProcess|null|undefined} child
 * @param {{ signal?: NodeJS.Signals, graceMs?: number }} [options]
 * @returns {Promise<void>}
 */
function stopChild(child, { signal = 'SIGKILL', graceMs = 5000 } = {}) {
  return new Promise((resolve) => {
    if (!child || !child.pid || child.exitCode !== null || child.signalCode !== null) {
      resolve();
      return;
    }
    let timer = null;
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    const kill = (sig) => {
      try {
        process.kill(child.pid, sig);
        return true;
      } catch {
        return false; // already gone: 'exit' is on its way, or was missed
      }
    };
    if (!kill(signal)) {
      resolve();
      return;
    }
    if (signal !== 'SIGKILL') timer = setTimeout(() => kill('SIGKILL'), graceMs);
  });
}

/**
 * Abort a bench that runs past its bound: say so, SIGKILL the children it has running (read when
 * it fires), exit 2. Unref'd: it never keeps the bench alive; clear it with clearTimeout.
 * @param {string} name the bench, as its message names it
 * @param {number} ms
 * @param {() => Iterable<{ pid?: number } | null | undefined>} [running]
 * @returns {NodeJS.Timeout}
 */
function watchdog(name, ms, running = () => []) {
  const timer = setTimeout(() => {
    console.error(`${name}: watchdog: over ${Math.round(ms / 1000)} s, aborting`);
    for (const c of running()) {
      if (!c || !c.pid) continue;
      try {
        process.kill(c.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    process.exit(2);
  }, ms);
  timer.unref();
  return timer;
}

/**
 * CPU time used so far by every live thread of a process, in nanoseconds (Linux
 * /proc/<pid>/task/<tid>/schedstat: on-CPU ns, unlike /stat's 10 ms ticks). A thread that ends
 * between the listing and its read is left out.
 * @param {number} pid
 * @returns {number}
 */
function processCpuNs(pid) {
  const fs = require('fs');
  let total = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ')[0]);
    } catch {
      // the thread ended between readdir and read
    }
  }
  return total;
}

/**
 * The first line a child writes on stdout (an app saying it is ready); rejects if the child exits
 * first. The rest of its output is drained.
 * @param {import('node:child_process').ChildProcess} child spawned with stdout 'pipe'
 * @param {string} [name] for the error message
 * @returns {Promise<string>}
 */
function firstLine(child, name = 'the app') {
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl === -1) return;
      child.stdout.off('data', onData);
      child.stdout.resume();
      resolve(buf.slice(0, nl));
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}) before it was ready`)));
  });
}

/**
 * The port a server child prints as its first line on stdout. If it exits first, or prints
 * nothing within timeoutMs, it is stopped (SIGTERM, SIGKILL after 5 s) and the promise rejects
 * with a message naming it, followed by what `detail()` returns (its stderr, say).
 * @param {import('node:child_process').ChildProcess} child spawned with stdout 'pipe'
 * @param {{ name?: string, timeoutMs?: number, detail?: () => string }} [options]
 * @returns {Promise<number>}
 */
async function serverPort(child, { name = 'server', timeoutMs = 10000, detail = () => '' } = {}) {
  let timer;
  const silent = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${name} did not print its port within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  try {
    const line = await Promise.race([firstLine(child, name), silent]);
    if (!/^\d+$/.test(line)) throw new Error(`${name} printed ${JSON.stringify(line)}, not its port`);
    return Number(line);
  } catch (err) {
    await stopChild(child, { signal: 'SIGTERM', graceMs: 5000 });
    throw new Error(`${err.message}${detail()}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Everything a child writes until it closes. Past timeoutMs it is killed by pid (SIGKILL) and
 * timedOut is true.
 * @param {import('node:child_process').ChildProcess} child spawned with stdout and stderr 'pipe'
 * @param {number} timeoutMs
 * @returns {Promise<{ code: number|null, stdout: string, stderr: string, timedOut: boolean }>}
 */
function childOutput(child, timeoutMs) {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
}

/**
 * The children a bench has running, so that an error, a signal or its watchdog can stop them all:
 * track(child) keeps a child until it exits, killAll() SIGKILLs each by its pid. Iterable (for
 * watchdog()).
 */
class Children {
  #running = new Set();

  /**
   * @template {import('node:child_process').ChildProcess} C
   * @param {C} child
   * @returns {C}
   */
  track(child) {
    this.#running.add(child);
    child.once('exit', () => this.#running.delete(child));
    return child;
  }

  killAll() {
    for (const c of this.#running) {
      try {
        process.kill(c.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  [Symbol.iterator]() {
    return this.#running.values();
  }
}

module.exports = { scrubEnv, cleanEnv, freePort, stopChild, firstLine, serverPort, childOutput, Children, processCpuNs, watchdog };
