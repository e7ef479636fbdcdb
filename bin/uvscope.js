#!/usr/bin/env node
// @ts-check
'use strict';

// uvscope [--port N] [--host H] [--exporters LIST] -- <command> [args...]
// Runs the command with the agent preloaded into every Node process it starts (NODE_OPTIONS).

const { spawn } = require('child_process');
const path = require('path');
const util = require('util');
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

// util.parseArgs reads the whole line; uvscope reads its own flags only up to the command.
/** @type {import('util').ParseArgsOptionsConfig} */
const OPTIONS = Object.freeze({
  help: { type: 'boolean', short: 'h' },
  ...Object.fromEntries(Object.keys(FLAGS).map((flag) => [flag.slice(2), { type: 'string' }])),
});

/**
 * Parse the command line into environment settings and the command to run.
 * @param {string[]} argv arguments after `uvscope`
 * @returns {{ env: Record<string, string>, command: string[], help: boolean, error?: string }}
 */
function parseArgs(argv) {
  /** @type {Record<string, string>} */
  const env = {};
  for (const token of util.parseArgs({ args: argv, options: OPTIONS, strict: false, allowPositionals: true, tokens: true }).tokens) {
    const arg = argv[token.index];
    if (token.kind === 'option-terminator') return { env, command: argv.slice(token.index + 1), help: false };
    // The command starts here (the -- is optional); a lone - is not one.
    if (token.kind === 'positional') {
      if (arg.startsWith('-')) return { env, command: [], help: false, error: `unknown option ${arg}` };
      return { env, command: argv.slice(token.index), help: false };
    }
    if (arg === '-h' || arg === '--help') return { env, command: [], help: true };
    const flag = FLAGS[token.rawName] && (arg === token.rawName || arg.startsWith(`${token.rawName}=`)) ? token.rawName : null;
    if (!flag) return { env, command: [], help: false, error: `unknown option ${arg}` };
    if (token.value === undefined) return { env, command: [], help: false, error: `${flag} needs a value` };
    env[FLAGS[flag]] = token.value;
  }
  return { env, command: [], help: false };
}

/**
 * The options of `uvscope report`, or the argument it does not know.
 * @param {string[]} argv arguments after `report`
 * @returns {{ url?: string, html?: string, unknown?: string }}
 */
function parseReportArgs(argv) {
  /** @type {{ url?: string, html?: string }} */
  const out = {};
  /** @type {Record<'url'|'html', { type: 'string' }>} */
  const options = { url: { type: 'string' }, html: { type: 'string' } };
  for (const token of util.parseArgs({ args: argv, options, strict: false, allowPositionals: true, tokens: true }).tokens) {
    const arg = argv[token.index];
    const known = token.kind === 'option' && options[token.name] && (arg === token.rawName || arg.startsWith(`${token.rawName}=`));
    // A value of its own argument must not be empty; --url= may be.
    if (!known || token.value === undefined || (!token.inlineValue && !token.value)) return { unknown: arg };
    out[token.name] = token.value;
  }
  return out;
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
  const given = parseReportArgs(argv);
  if (given.unknown !== undefined) {
    process.stderr.write(`uvscope report: unknown argument ${given.unknown}\n${USAGE}\n`);
    return 2;
  }
  if (given.url !== undefined) url = given.url;
  const html = given.html === undefined ? null : given.html;
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
