#!/usr/bin/env node
'use strict';

// uvscope [--port N] [--host H] [--exporters LIST] -- <command> [args...]
// Runs the command with the agent preloaded into every Node process it starts (NODE_OPTIONS).

const { spawn } = require('child_process');
const path = require('path');
const { envName, readSetting, childEnvironment } = require('../lib/agent/options');

const USAGE = `usage: uvscope [--port N] [--host H] [--exporters LIST] [--interval-ms N] -- <command> [args...]
       uvscope report [--url URL] [--html FILE]
  The first form runs <command> with uvscope preloaded (NODE_OPTIONS="--require uvscope/register").
  Metrics: http://<host>:<port>/metrics (default 127.0.0.1:9464).
  report prints the findings of a running agent, read from URL: its base URL or its
  /snapshot.json (default http://127.0.0.1:$UVSCOPE_PROMETHEUS_PORT, port 9464); with --html FILE
  it writes the agent's page with the data embedded, one static file to attach to a ticket.
  The live page is at http://<host>:<port>/.`;

// Each flag sets a setting's environment variable (lib/agent/options.js) for the command it runs.
const FLAGS = Object.freeze({
  '--port': envName('prometheus.port'),
  '--host': envName('prometheus.host'),
  '--exporters': envName('exporters'),
  '--interval-ms': envName('intervalMs'),
});

/**
 * Parse the command line into environment settings and the command to run.
 * @param {string[]} argv arguments after `uvscope`
 * @returns {{ env: Record<string, string>, command: string[], help: boolean, error?: string }}
 */
function parseArgs(argv) {
  const env = {};
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      i++;
      break;
    }
    if (arg === '-h' || arg === '--help') return { env, command: [], help: true };
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (FLAGS[flag]) {
      const value = inline !== undefined ? inline : argv[++i];
      if (value === undefined) return { env, command: [], help: false, error: `${flag} needs a value` };
      env[FLAGS[flag]] = value;
      continue;
    }
    if (arg.startsWith('-')) return { env, command: [], help: false, error: `unknown option ${arg}` };
    break; // the command starts here (the -- is optional)
  }
  return { env, command: argv.slice(i), help: false };
}

/**
 * NODE_OPTIONS with the preload appended (quoted, as NODE_OPTIONS allows, for paths with spaces).
 * @param {string|undefined} existing
 */
function nodeOptionsWithPreload(existing) {
  const register = path.join(__dirname, '..', 'register.js');
  const preload = `--require ${JSON.stringify(register)}`;
  return existing ? `${existing} ${preload}` : preload;
}

/**
 * The snapshot URL for what a user typed: the agent's base URL (http://127.0.0.1:9464, or just
 * 127.0.0.1:9464), its page (.../) or the snapshot itself (.../snapshot.json).
 * @param {string} given
 */
function snapshotUrl(given) {
  const text = String(given).trim();
  const url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  if (!url.pathname.endsWith('/snapshot.json')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/snapshot.json`;
  return url.href;
}

/**
 * uvscope report: fetch a running agent's /snapshot.json and print it for people, or with
 * --html FILE write the page with the snapshot and the last minutes' history embedded.
 * @param {string[]} argv arguments after `report`
 */
async function report(argv) {
  let url = `http://127.0.0.1:${readSetting('prometheus.port')}`;
  let html = null;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--url' && argv[i + 1]) url = argv[++i];
    else if (argv[i].startsWith('--url=')) url = argv[i].slice(6);
    else if (argv[i] === '--html' && argv[i + 1]) html = argv[++i];
    else if (argv[i].startsWith('--html=')) html = argv[i].slice(7);
    else {
      process.stderr.write(`uvscope report: unknown argument ${argv[i]}\n${USAGE}\n`);
      return 2;
    }
  }
  let target = url;
  try {
    target = snapshotUrl(url);
    const res = await fetch(target);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const snapshot = await res.json();
    if (html === null) {
      process.stdout.write(require('../lib/report/text').formatReport(snapshot));
      return 0;
    }
    let history = [];
    try {
      const h = await fetch(new URL('history.json', target));
      if (h.ok) history = await h.json();
    } catch {
      // an agent without the page's history: the report shows the snapshot alone
    }
    require('fs').writeFileSync(html, require('../lib/report/page').staticReport({ snapshot, history }));
    process.stdout.write(`uvscope report: wrote ${html}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`uvscope report: cannot read ${target}: ${err.cause ? err.cause.message : err.message}\n`);
    return 1;
  }
}

function main() {
  if (process.argv[2] === 'report') {
    report(process.argv.slice(3)).then((code) => (process.exitCode = code));
    return;
  }
  const { env, command, help, error } = parseArgs(process.argv.slice(2));
  if (help || error || command.length === 0) {
    if (error) process.stderr.write(`uvscope: ${error}\n`);
    process.stderr.write(`${USAGE}\n`);
    process.exitCode = help ? 0 : 2;
    return;
  }
  const childEnv = childEnvironment(env);
  childEnv.NODE_OPTIONS = nodeOptionsWithPreload(childEnv.NODE_OPTIONS);
  const child = spawn(command[0], command.slice(1), { stdio: 'inherit', env: childEnv });
  const forward = (signal) => () => {
    if (child.pid) process.kill(child.pid, signal);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward(signal));
  child.on('error', (err) => {
    process.stderr.write(`uvscope: cannot run ${command[0]}: ${err.message}\n`);
    process.exitCode = 127;
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else {
      process.exitCode = code;
    }
  });
}

if (require.main === module) main();

module.exports = { parseArgs, nodeOptionsWithPreload, snapshotUrl };
