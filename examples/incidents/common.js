'use strict';
// The incident lab's plumbing: a DNS server on 127.0.0.2:53 whose answers the lab controls, and
// apps run with uvscope preloaded in a private mount namespace whose resolv.conf points at it
// (the machine's /etc/resolv.conf is never touched). Everything stays on 127.0.0.0/8.
const http = require('http');
const path = require('path');
const { spawn } = require('child_process');
const { createDnsServer } = require('../../support/dns-server');
const { namespaceSupport, spawnInNamespace, resolvConf } = require('../../support/namespace');
const { freePort, cleanEnv, stopChild, firstLine } = require('../../support/processes');
const { findPoint } = require('../../lib/snapshot/snapshot');

const REGISTER = path.join(__dirname, '..', '..', 'register.js');
const DNS_ADDRESS = '127.0.0.2';
// npm start -- --keep: the incident's app keeps running after its run, to look at its page.
let keep = false;
let announce = () => {}; // the lab prints where each page is; tests stay quiet
// The lab's tests: each app's agent checks its findings rules' quiet() (UVSCOPE_TEST_CHECK_QUIET,
// lib/core/faults.js), and a snapshot that counts a findings failure rejects.
let checkQuiet = false;

/**
 * Lab settings from the command line (and the lab's tests: checkQuiet).
 * @param {{ keep?: boolean, announce?: (line: string) => void, checkQuiet?: boolean }} options
 */
function configureLab(options) {
  if (options.keep !== undefined) keep = options.keep;
  if (options.announce) announce = options.announce;
  if (options.checkQuiet !== undefined) checkQuiet = options.checkQuiet;
}

/** Whether the lab can run its own DNS server and namespace here, and if not, why. */
function labSupport() {
  return namespaceSupport();
}

/** The lab's DNS server (names set by each incident). */
function startDns() {
  return createDnsServer({ address: DNS_ADDRESS, port: 53 });
}

/**
 * Run an incident that needs the lab's DNS server: where the lab cannot run, print why and resolve
 * { skipped }; else start the server, run fn(dns) and close the server after it.
 * @template T
 * @param {(line: string) => void} print
 * @param {(dns: Awaited<ReturnType<typeof startDns>>) => Promise<T>} fn
 * @returns {Promise<T | { skipped: string }>}
 */
async function withLab(print, fn) {
  const support = labSupport();
  if (!support.ok) {
    print(`  skipped: ${support.reason} (the lab needs its own DNS server and a private mount namespace)`);
    return { skipped: support.reason };
  }
  const dns = await startDns();
  try {
    return await fn(dns);
  } finally {
    await dns.close();
  }
}

/**
 * Start an app with uvscope preloaded. Resolves once the app prints its first JSON line.
 * spawnWith: spawn's stand-in for an app outside the namespace (a cgroup's, support/cgroup.js);
 * cpus: the CPUs it may run on (taskset -c, e.g. '0'; without a namespace only).
 * @param {{ app: string, env?: object, conf?: object, namespace?: boolean, spawnWith?: Function, cpus?: string }} options
 */
async function startApp({ app, env = {}, conf = {}, namespace = true, spawnWith = spawn, cpus }) {
  const metricsPort = await freePort();
  const fullEnv = cleanEnv({ UVSCOPE_PROMETHEUS_PORT: String(metricsPort), UVSCOPE_INTERVAL_MS: '250', ...(checkQuiet ? { UVSCOPE_TEST_CHECK_QUIET: 'true' } : {}), ...env });
  const args = ['--require', REGISTER, path.join(__dirname, 'apps', app)];
  const stdio = ['ignore', 'pipe', 'inherit'];
  const child = namespace
    ? spawnInNamespace({ resolvConf: resolvConf({ nameserver: DNS_ADDRESS, ...conf }), args, env: fullEnv, stdio })
    : cpus ? spawnWith('taskset', ['-c', cpus, process.execPath, ...args], { env: fullEnv, stdio }) : spawnWith(process.execPath, args, { env: fullEnv, stdio });
  const ready = JSON.parse(await firstLine(child, app));
  const get = async (p) => (await fetch(`http://127.0.0.1:${metricsPort}${p}`)).json();
  const snapshot = async () => {
    const s = await get('/snapshot.json');
    if (checkQuiet && findPoint(s.points, 'uvscope.errors', { 'uvscope.component': 'findings' })) throw new Error(`${app}: the findings engine failed (its quiet() check, on the app's stderr)`);
    return s;
  };
  const page = `http://127.0.0.1:${metricsPort}/`;
  announce(`    live page of ${app}: ${page} (while it runs)`);
  return {
    pid: child.pid,
    ready,
    metricsPort,
    snapshot,
    page,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (keep) {
        announce(`    ${app} keeps running: open ${page}; Ctrl-C ends it.`);
        await new Promise((resolve) => process.once('SIGINT', resolve));
      }
      await stopChild(child);
    },
  };
}

/**
 * Drive `concurrency` clients against an HTTP server for `seconds`; returns requests done.
 * @param {number} port
 */
async function load(port, { seconds, concurrency }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const stopAt = Date.now() + seconds * 1000;
  let done = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < stopAt) {
      await new Promise((resolve) => http.get({ host: '127.0.0.1', port, agent, timeout: 10000 }, (res) => {
        res.resume();
        res.on('end', resolve);
      }).on('error', resolve));
      done++;
    }
  }));
  agent.destroy();
  return done;
}

/** An HTTP server on 127.0.0.1 standing in for upstream services. */
async function startUpstream() {
  const server = http.createServer((req, res) => res.end('upstream\n')).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return { port: server.address().port, close: () => new Promise((r) => server.close(r)) };
}

/** A value from a snapshot's points. */
function value(snapshot, name, attributes = {}) {
  const p = findPoint(snapshot.points, name, attributes);
  return p ? (p.histogram || p.value) : undefined;
}

/**
 * The mean of a histogram metric over every point whose attributes include the given ones (all
 * hostnames' lookups, say), in its unit; null when nothing was counted.
 */
function meanOf(snapshot, name, attributes = {}) {
  const keys = Object.keys(attributes);
  let sum = 0;
  let count = 0;
  for (const p of snapshot.points) {
    if (p.name !== name || !p.histogram || !keys.every((k) => p.attributes[k] === attributes[k])) continue;
    sum += p.histogram.sum;
    count += p.histogram.count;
  }
  return count ? sum / count : null;
}

/** Seconds as milliseconds for the lab's lines; '-' when unknown. */
function ms(s, digits = 1) {
  return s === null || s === undefined ? '-' : `${(s * 1000).toFixed(digits)} ms`;
}

/** Print findings the way `uvscope report` does, indented. */
function printFindings(print, snapshot) {
  if (snapshot.findings.length === 0) print('    uvscope: no findings.');
  for (const f of snapshot.findings) {
    print(`    uvscope [${f.severity}] ${f.id}: ${f.summary}`);
    print(`      -> ${f.advice[0]}`);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

module.exports = { configureLab, labSupport, withLab, startDns, startApp, load, startUpstream, value, meanOf, ms, printFindings, sleep, REGISTER };
