'use strict';

// Blocks the event loop for real, for a known time, and publishes the block's record on
// uvscope:eventloop.block as the watchdog does (lib/core/channels.js): a few ms after the block,
// once the loop runs again and reads a message (here a MessageChannel's, as a worker's would be).
// The record carries the start and end this measured, so a test's ground truth is the spin.

const diagnosticsChannel = require('diagnostics_channel');
const { MessageChannel } = require('worker_threads');

const channel = diagnosticsChannel.channel('uvscope:eventloop.block');
const nowMs = () => performance.timeOrigin + performance.now();

let ports = null;
function port() {
  if (ports) return ports.port1;
  ports = new MessageChannel();
  ports.port2.on('message', (record) => channel.publish(record));
  ports.port2.unref();
  return ports.port1;
}

/**
 * Spins the loop for ms, then posts the record, published when the loop reads it (publish false:
 * a block nobody reports).
 * @param {number} ms
 * @param {{ name?: string, caller?: string, cause?: 'code'|'gc', route?: string | null, publish?: boolean }} [about]
 * @returns {{ start: number, end: number, seconds: number, cause: string, blocker: object | null, route: string | null }}
 */
function blockLoop(ms, { name = 'spin', caller, cause = 'code', route = null, publish = true } = {}) {
  const start = nowMs();
  while (nowMs() - start < ms);
  const end = nowMs();
  const record = { start, end, seconds: (end - start) / 1e3, cause, blocker: name ? { name, ...(caller ? { caller } : {}) } : null, route };
  if (publish) port().postMessage(record);
  return record;
}

module.exports = { blockLoop, channel };
