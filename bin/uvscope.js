#!/usr/bin/env node
'use strict';

// uvscope [--port N] [--host H] [--exporters LIST] -- <command> [args...]
// Runs the command with the agent preloaded into every Node process it starts (NODE_OPTIONS).

const { spawn } = require('child_process');
const path = require('path');

const USAGE = `usage: uvscope [--port N] [--host H] [--exporters LIST] [--interval-ms N] -- <command> [args...]
       uvscope report [--url URL]
  The first form runs <command> with uvscope preloaded (NODE_OPTIONS="--require uvscope/register").
  Metrics: http://<host>:<port>/metrics (default 127.0.0.1:9464).
  report prints the findings of a running agent, read from URL: the agent's address
  (http://127.0.0.1:9464) or its snapshot (http://127.0.0.1:9464/snapshot.json)
  (default http://127.0.0.1:$UVSCOPE_PROMETHEUS_PORT/snapshot.json, port 9464).`;

const FLAGS = Object.freeze({
  '--port': 'UVSCOPE_PROMETHEUS_PORT',
  '--host': 'UVSCOPE_PROMETHEUS_HOST',
  '--exporters': 'UVSCOPE_EXPORTERS',
  '--interval-ms': 'UVSCOPE_INTERVAL_MS',
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
 * The snapshot's URL from what a user types: the agent's base URL (http://127.0.0.1:9464, with or
 * without a trailing slash, or just 127.0.0.1:9464) means its /snapshot.json; any other path is
 * taken as given.
 * @param {string} input
 * @returns {string}
 */
function snapshotUrl(input) {
  const text = String(input).trim();
  let url;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  } catch {
    return text; // fetch says what is wrong with it
  }
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/snapshot.json';
  return url.href;
}

/**
 * uvscope report: fetch a running agent's /snapshot.json and print it for people.
 * @param {string[]} argv arguments after `report`
 */
async function report(argv) {
  let url = `http://127.0.0.1:${process.env.UVSCOPE_PROMETHEUS_PORT || 9464}/snapshot.json`;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--url' && argv[i + 1]) url = snapshotUrl(argv[++i]);
    else if (argv[i].startsWith('--url=')) url = snapshotUrl(argv[i].slice(6));
    else {
      process.stderr.write(`uvscope report: unknown argument ${argv[i]}\n${USAGE}\n`);
      return 2;
    }
  }
  try {
    const res = await fetch(url);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    process.stdout.write(require('../lib/format-report').formatReport(await res.json()));
    return 0;
  } catch (err) {
    process.stderr.write(`uvscope report: cannot read ${url}: ${err.cause ? err.cause.message : err.message}\n`);
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
  const child = spawn(command[0], command.slice(1), {
    stdio: 'inherit',
    env: { ...process.env, ...env, NODE_OPTIONS: nodeOptionsWithPreload(process.env.NODE_OPTIONS) },
  });
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
