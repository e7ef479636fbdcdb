'use strict';

// Child processes for the tests, the lab (examples/) and the benchmarks (bench/): a clean
// environment, a free port, and stopping a child by its pid.

const net = require('node:net');

/**
 * Environment for a child: the parent's, without NODE_OPTIONS, UVSCOPE_* or UV_THREADPOOL_SIZE
 * leaking in, with `extra` on top. The snapshot's own server (on when Prometheus is off) takes a
 * free port unless `extra` names one, so children running at once never compete for its default
 * port.
 * @param {Record<string, string>} [extra]
 * @returns {Record<string, string>}
 */
function cleanEnv(extra = {}) {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  for (const k of Object.keys(env)) if (k.startsWith('UVSCOPE_') || k === 'UV_THREADPOOL_SIZE') delete env[k];
  return { ...env, UVSCOPE_SNAPSHOT_PORT: '0', ...extra };
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

module.exports = { cleanEnv, freePort, stopChild, firstLine, processCpuNs, watchdog };
