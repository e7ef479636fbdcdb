'use strict';

// start(), stop(), getAgent() and preload(), which lib/index.js exports. register.js loads this
// file rather than lib/index.js: the metric catalog lib/index.js exports is not needed to start.

const { Agent } = require('./agent');
const { resolveOptions } = require('./options');
const { reportError } = require('../core/errors');

// Shared by every installed copy of uvscope in the process, so two copies never both start.
const AGENT = Symbol.for('uvscope.agent');

/**
 * Start the agent (once per process). Options override the UVSCOPE_* environment variables.
 * Never throws: a failure is reported as a process warning and the app goes on.
 * @param {import('../../index').Options} [options]
 * @returns {Agent|null} the running agent (the one already running if any), or null if disabled
 */
function start(options) {
  return startAgent(options, false);
}

/**
 * What `--require uvscope/register` runs: start() with the environment's settings, whose second
 * phase (exporters, most samplers) waits for the first timer tick after the app's top-level code,
 * so a process that exits first never loads prom-client, hot-shots or the OpenTelemetry SDK.
 * @returns {Agent|null}
 */
function preload() {
  return startAgent(undefined, true);
}

function startAgent(options, defer) {
  let agent = null;
  try {
    const running = globalThis[AGENT];
    if (running) return running;
    const resolved = resolveOptions(options);
    if (resolved.disabled) return null;
    agent = new Agent(resolved);
    Object.defineProperty(globalThis, AGENT, { value: agent, configurable: true, enumerable: false, writable: false });
    return agent.start({ defer });
  } catch (err) {
    reportError('start', err);
    // Undo what was done (timer, wrapped dns.lookup, servers, listeners) and free the guard, so a
    // later start() can succeed.
    if (agent) {
      if (globalThis[AGENT] === agent) delete globalThis[AGENT];
      agent.stop().catch((e) => reportError('start', e));
    }
    return null;
  }
}

/**
 * Stop the running agent, if any: timers cleared, server closed, dns.lookup restored.
 * @returns {Promise<void>}
 */
async function stop() {
  const agent = globalThis[AGENT];
  if (!agent) return;
  delete globalThis[AGENT];
  await agent.stop();
}

/** @returns {Agent|null} the running agent, if any */
function getAgent() {
  return globalThis[AGENT] || null;
}

module.exports = { start, stop, getAgent, preload };
