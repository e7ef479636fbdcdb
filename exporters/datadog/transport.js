'use strict';

const { Writable } = require('stream');
const { createAgentAddress } = require('./address');
const { injectFault } = require('../../lib/core/faults');

// Safe datagram sizes (Datadog's guidance, also dd-trace's and hot-shots'): a UDP datagram that
// fits a 1500-byte MTU, 8 KiB on a Unix socket. hot-shots' stream transport appends one '\n'.
const UDP_MAX_BYTES = 1400;
const UDS_MAX_BYTES = 8191;

/**
 * Where metrics go: a hot-shots client that is only ever given an IP address (so it never looks a
 * name up), replaced when the Agent's address changes; or a Unix datagram socket; or the app's
 * own client. Every variant drops what it cannot send and never buffers more than one datagram.
 *
 * @param {object} options
 * @param {{protocol: 'udp', host: string, port: number}|{protocol: 'uds', path: string}} options.target
 * @param {readonly string[]} options.globalTags unified service tags and DD_TAGS
 * @param {object} [options.client] the app's own hot-shots client: used as is, never closed
 * @param {Function} options.lookup dns.lookup-compatible, for the Agent's hostname
 * @param {number} options.refreshMs
 * @param {(what: string, err: unknown) => void} options.onError
 * @param {() => any} [options.loadStatsD] returns the hot-shots StatsD class (injectable)
 * @param {() => any} [options.loadUnixDgram] returns the unix-dgram module (injectable)
 */
function createSink(options) {
  const { target, globalTags, client: appClient, lookup, refreshMs, onError } = options;
  if (appClient) return wrapClient(appClient, false, null);

  const loadStatsD = options.loadStatsD || (() => require('hot-shots').StatsD);
  const StatsD = loadStatsD();
  const common = {
    globalTags: [...globalTags],
    // uvscope resolves the DD_* settings itself (an option given to start() wins), so hot-shots
    // must not read them again from the environment.
    includeDataDogTags: false,
    includeDatadogTelemetry: false,
    datadog: true,
    bufferFlushInterval: 1000,
    errorHandler: (err) => onError('send', err),
  };

  if (target.protocol === 'uds') {
    const loadUnixDgram = options.loadUnixDgram || (() => require('unix-dgram'));
    let unixDgram;
    try {
      unixDgram = loadUnixDgram();
    } catch (err) {
      onError('uds-unavailable', err);
      return wrapClient(null, true, null);
    }
    const stream = createUdsStream(target.path, unixDgram);
    return wrapClient(new StatsD({ ...common, protocol: 'stream', stream, maxBufferSize: UDS_MAX_BYTES }), true, null);
  }

  const sink = wrapClient(null, true, null);
  const address = createAgentAddress({
    host: target.host,
    refreshMs,
    lookup,
    onError: (err) => onError('resolve', err),
    onChange: ({ address: ip, family }) => {
      injectFault('datadog:address');
      const next = new StatsD({
        ...common,
        host: ip,
        port: target.port,
        protocol: 'udp',
        maxBufferSize: UDP_MAX_BYTES,
        udpSocketOptions: { type: family === 6 ? 'udp6' : 'udp4' },
      });
      sink.replace(next);
    },
  });
  sink.address = address;
  return sink;
}

/** A uniform face over a hot-shots client (or none yet). */
function wrapClient(initial, owned, address) {
  let client = initial;
  let closed = false;
  const closeClient = (c) => new Promise((resolve) => {
    try {
      c.close(() => resolve());
    } catch {
      resolve();
    }
  });
  return {
    address,
    get client() {
      return client;
    },
    replace(next) {
      const old = client;
      client = next;
      if (old && owned) closeClient(old);
    },
    gauge(name, value, tags) {
      if (client && !closed) client.gauge(name, value, tags);
    },
    count(name, value, tags) {
      if (client && !closed) client.increment(name, value, tags);
    },
    distribution(name, value, sampleRate, tags) {
      if (client && !closed) client.distribution(name, value, sampleRate, tags);
    },
    refresh(now) {
      if (this.address) this.address.refresh(now);
    },
    flush() {
      if (client && !closed && typeof client.flush === 'function') client.flush();
    },
    async close() {
      if (closed) return;
      closed = true;
      if (this.address) this.address.close();
      if (!client) return;
      if (owned) await closeClient(client);
      else if (typeof client.flush === 'function') client.flush();
    },
  };
}

/**
 * One datagram per write to a Unix datagram socket, through unix-dgram. The socket lives only for
 * the send: unix-dgram watches every socket it creates with a referenced uv_poll handle that
 * cannot be unref'd, which would keep the app alive. A full or absent socket drops the datagram.
 */
function createUdsStream(path, unixDgram) {
  return new Writable({
    write(chunk, encoding, callback) {
      let socket;
      try {
        socket = unixDgram.createSocket('unix_dgram');
        socket.on('error', () => {});
        socket.send(chunk, 0, chunk.length, path, () => {});
      } catch {
        // dropped: nothing to report per datagram
      } finally {
        try {
          if (socket) socket.close();
        } catch {
          // already closed
        }
      }
      callback();
    },
  });
}

module.exports = { createSink };
