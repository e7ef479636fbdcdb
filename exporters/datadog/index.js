'use strict';

const { warnOnce, countError, reportError } = require('../../lib/core/errors');
const { WARNINGS } = require('../../lib/core/warnings');
const { readSetting } = require('../../lib/core/setting');
const { RUNTIME_METRICS } = require('./manifest');
const { createSink } = require('./transport');
const { createSeriesFlusher, tag } = require('./series');
const { CATALOG } = require('../../lib/snapshot/catalog');
const { createEventDistributions } = require('./lookups');
const { processIdentity } = require('../../lib/core/identity');

/**
 * The DogStatsD exporter (UVSCOPE_EXPORTERS=datadog): gauges, counts and the queue-wait count/sum
 * every flush interval (default 10 s, from snapshot times: no timer of its own), one distribution
 * value per app lookup. uvscope's context on dd-trace's dns.lookup spans (spans.js) does not depend
 * on this exporter: lib/agent/spans.js starts it.
 *
 * It never adds to the DNS problem it measures: the Agent's hostname is looked up once and then
 * at most once per dnsRefreshMs, in the background, and never before the first sample (a lookup
 * at preload time would start the threadpool before the app could set UV_THREADPOOL_SIZE).
 *
 * @param {import('../index').ExporterContext} context
 * @returns {{ name: string, export(snapshot: object): void, close(): Promise<void>, sink: object }}
 */
function createExporter(context) {
  const o = context.options.datadog;
  const target = o.url || { protocol: 'udp', host: o.host, port: o.port };

  const sink = createSink({
    target,
    globalTags: unifiedTags(o),
    client: o.client,
    lookup: context.ownLookup,
    refreshMs: o.dnsRefreshMs,
    onError,
  });

  const flushSeries = createSeriesFlusher({ sink, eventLoop: () => sendEventLoop(o.eventLoop) });
  // Every metric the catalog records per event goes as distributions, from its channel.
  const distributions = CATALOG.filter((def) => def.perEvent).map((def) => createEventDistributions({
    sink, def, channel: context.channels.published[def.perEvent.channel], maxPerSecond: o.maxLookupsPerSecond,
  }));
  let lastFlush = -Infinity;

  // When the app's work is done: what was gathered since the last sample leaves now (at each
  // beforeExit, if the app goes on; an empty buffer sends nothing, so this never keeps it going).
  // The sends are UDP (or one Unix datagram each) and finish at once; nothing waits for an answer.
  const onBeforeExit = () => {
    try {
      sink.flush();
    } catch (err) {
      reportError('exporter:datadog', err);
    }
  };
  process.on('beforeExit', onBeforeExit);

  return {
    name: 'datadog',
    sink,
    export(snapshot) {
      sink.refresh(snapshot.time);
      if (snapshot.time - lastFlush >= o.flushIntervalMs) {
        lastFlush = snapshot.time;
        flushSeries(snapshot);
      }
      // Lookup distributions gathered since the last sample leave now, many to a datagram.
      sink.flush();
    },
    async close() {
      process.removeListener('beforeExit', onBeforeExit);
      for (const d of distributions) d.close();
      await sink.close();
    },
  };
}

// pid (and worker_id in a cluster worker) on everything: DogStatsD keeps the last gauge value per
// tag set and flush, so without them the processes of one app would overwrite each other's gauges.
function unifiedTags(o) {
  const { pid, workerId } = processIdentity();
  const tags = [...o.tags.filter((t) => !/^(pid|worker_id):/.test(t)), tag('pid', String(pid))];
  if (workerId !== undefined) tags.push(tag('worker_id', workerId));
  for (const key of ['service', 'env', 'version']) {
    if (o[key] === undefined) continue;
    const i = tags.findIndex((t) => t.startsWith(`${key}:`));
    if (i !== -1) tags.splice(i, 1); // DD_SERVICE/DD_ENV/DD_VERSION win over the same key in DD_TAGS
    tags.push(tag(key, o[key]));
  }
  return tags;
}

// dd-trace's runtime metrics already send event-loop delay, heap and GC (runtime.node.event_loop.*,
// runtime.node.heap.*, runtime.node.gc.*).
function sendEventLoop(setting) {
  if (setting !== 'auto') return setting;
  return !readSetting(RUNTIME_METRICS);
}

function onError(what, err) {
  countError('exporter:datadog');
  if (what === 'uds-unavailable') {
    warnOnce(WARNINGS.DATADOG_UDS_UNAVAILABLE, 'uvscope: DD_DOGSTATSD_URL names a Unix socket, but the native unix-dgram module ' +
      `(hot-shots' optional dependency) is not built for this Node.js (${err && err.message ? err.message.split('\n')[0] : err}). ` +
      'Build it with `npm install-scripts approve unix-dgram && npm rebuild unix-dgram`, or use udp://. No metrics are sent to Datadog.');
  } else if (what === 'resolve') {
    warnOnce(WARNINGS.DATADOG_AGENT_UNRESOLVED, `uvscope: cannot resolve the Datadog Agent's host (${err && (err.code || err.message)}); ` +
      'the last good address is kept, and until there is one metrics are dropped. Check DD_AGENT_HOST / DD_DOGSTATSD_HOST / DD_DOGSTATSD_URL.');
  }
  // Send errors are dropped datagrams: counted, never a warning per packet.
}

module.exports = { createExporter };
