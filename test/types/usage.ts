// A typed use of every export of index.d.ts, compiled (never run) by test/types/types.test.js with
// `tsc -p test/types` (strict, noEmit). The package is imported by its own name: node16 resolution
// follows package.json "exports" from inside the package, as an app's resolution would from
// node_modules. Field names are the code's (lib/index.js, lib/agent/options.js, the samplers'
// details(), lib/findings/): a declaration that drifts from them fails the compile.

import 'uvscope/register';
import {
  start, stop, getAgent, preload, catalog,
  type Agent, type Options, type ExporterName, type PrometheusOptions, type DatadogOptions,
  type Snapshot, type SnapshotDetails, type Point, type HistogramData, type Finding, type FindingImpact,
  type DnsHostDetails, type ProcessSnapshot, type MetricDef, type Tick, type RawPoint, type Sampler,
  type Exporter, type ExporterContext,
} from 'uvscope';
import * as prometheusExporter from 'uvscope/exporters/prometheus';
import * as otlpExporter from 'uvscope/exporters/otlp';
import * as datadogExporter from 'uvscope/exporters/datadog';
import { Registry } from 'prom-client';
import type { StatsD } from 'hot-shots';

declare const statsd: StatsD;

// --- start() with every option group ---

const exporters: ExporterName[] = ['prometheus', 'otlp', 'datadog'];
const prometheus: PrometheusOptions = { host: '127.0.0.1', port: 0, registry: new Registry() };
const datadog: DatadogOptions = {
  url: 'udp://127.0.0.1:8125',
  host: '127.0.0.1',
  port: 8125,
  service: 'checkout',
  env: 'prod',
  version: '1.2.3',
  tags: ['team:dns', 'region:eu'],
  flushIntervalMs: 10000,
  dnsRefreshMs: 60000,
  maxLookupsPerSecond: 200,
  eventLoop: 'auto',
  traceTags: true,
  client: statsd,
};

const options: Options = {
  disabled: false,
  exporters,
  intervalMs: 1000,
  reportOnExit: 'uvscope-report.html',
  prometheus,
  multiprocess: { aggregate: true, maxProcesses: 128, ttlMs: 3000 },
  snapshot: { host: '127.0.0.1', port: 9465 },
  dns: { maxNames: 100 },
  tracer: { mode: 'auto', thresholdMs: 250, windowMs: 10000, cooldownMs: 90000 },
  datadog,
  otlp: { mode: 'companion', runtimeMetrics: 'off' },
};

const started: Agent | null = start(options);
start();
start({ exporters: 'prometheus,datadog', reportOnExit: true, datadog: { tags: 'team:dns,region:eu', eventLoop: false } });
start({ exporters: 'none', tracer: { mode: 'off' }, otlp: { mode: 'standalone', runtimeMetrics: 'auto' } });
// What --require uvscope/register runs.
const preloaded: Agent | null = preload();

// --- what must stay errors ---

// @ts-expect-error a misspelt option name
start({ intervalMS: 1000 });
// @ts-expect-error a port is a number, not a string
start({ prometheus: { port: '9464' } });
// @ts-expect-error an exporter uvscope does not have
start({ exporters: ['prometheus', 'statsd'] });
// @ts-expect-error a tracer mode that does not exist
start({ tracer: { mode: 'always' } });
// @ts-expect-error a misspelt option inside a group
start({ datadog: { flushIntervalMS: 10000 } });
// @ts-expect-error stop() resolves to nothing, not an agent
const notAnAgent: Promise<Agent> = stop();

// --- the agent, stop() and getAgent() ---

function readAgent(agent: Agent): void {
  const o = agent.options;
  const names: readonly ExporterName[] = o.exporters;
  const interval: number = o.intervalMs;
  const disabled: boolean = o.disabled;
  const onExit: boolean | string = o.reportOnExit;
  const promPort: number | undefined = o.prometheus.port;
  const snapshotAt: string = `${o.snapshot.host}:${o.snapshot.port}`;
  const maxNames: number = o.dns.maxNames;
  const mode: 'auto' | 'on' | 'off' | undefined = o.tracer.mode;
  const ttl: number | undefined = o.multiprocess.ttlMs;
  const service: string | undefined = o.datadog.service;
  const otlpMode: 'auto' | 'companion' | 'standalone' | undefined = o.otlp.mode;
  void [names, interval, disabled, onExit, promPort, snapshotAt, maxNames, mode, ttl, service, otlpMode];
  const last: Snapshot | null = agent.latest;
  if (last) readSnapshot(last);
  readSnapshot(agent.sampleNow());
  // @ts-expect-error the snapshot is read-only
  agent.latest = null;
}

async function lifecycle(): Promise<void> {
  const running: Agent | null = getAgent();
  if (running) readAgent(running);
  if (started) readAgent(started);
  if (preloaded) readAgent(preloaded);
  const stopped: void = await stop();
  void stopped;
  void notAnAgent;
}
void lifecycle;

// --- the catalog ---

function readCatalog(defs: readonly MetricDef[]): string[] {
  return defs.map((d) => {
    const kind: 'gauge' | 'counter' | 'histogram' = d.type;
    const buckets: number = d.buckets ? d.buckets.length : 0;
    const channel: string | undefined = d.perEvent?.channel;
    const value: string | undefined = d.perEvent?.value;
    const fromField: string | undefined = d.perEvent?.attributes['dns.question.name'];
    const once: true | undefined = d.onePerSample;
    const gauges: readonly string[] = d.intervalGauges ?? [];
    const runtime: true | undefined = d.runtimeMetrics;
    void [buckets, channel, value, fromField, once, gauges, runtime];
    return `${d.name} ${kind} ${d.unit} [${d.attributes.join(',')}] ${d.help}`;
  });
}
readCatalog(catalog);

// --- a snapshot: points, details, findings ---

function readPoint(p: Point): number {
  const attribute: string | undefined = p.attributes['dns.question.name'];
  void attribute;
  if (p.value !== undefined) return p.value;
  const h: HistogramData | undefined = p.histogram;
  if (!h) return 0;
  // Per-bucket counts, one more than the bounds: the last is the +Inf bucket.
  const overflow: number = h.counts[h.bounds.length];
  void overflow;
  return h.sum / Math.max(1, h.count);
}

function readDnsHost(host: DnsHostDetails): number {
  const interval: number = host.lookups + host.errors + host.seconds + host.maxSeconds + host.duplicates +
    host.maxInFlight + host.timeouts + host.inFlight + host.totalLookups;
  // Each lookup's time split into its wait for a DNS slot and its resolution.
  const split: number = host.queueWaitSeconds + host.resolveSeconds + host.queuedLookups;
  // Over the recent window: null while the name has no recent lookup.
  const recent: number = host.recentLookups;
  const p50: number | null = host.p50;
  const p99: number | null = host.p99;
  const stddev: number | null = host.stddev;
  const mean: number | null = host.mean;
  const tail = host.tail;
  const tailSplit: number = tail ? tail.lookups + tail.meanSeconds + tail.queueWaitSeconds + tail.resolveSeconds : 0;
  const callers: number = host.callers.reduce((n, c) => n + c.count + c.seconds + c.caller.length, 0);
  void [p50, p99, stddev, mean];
  return interval + split + recent + tailSplit + callers + host.name.length;
}

function readDetails(details: SnapshotDetails): number {
  let n = 0;
  if (details.dns) {
    n += details.dns.inFlight + details.dns.dnsSlots;
    for (const host of details.dns.hosts) n += readDnsHost(host);
  }
  const c = details.connections;
  if (c) {
    n += c.connections + c.connectSeconds + c.requests + c.newConnections;
    for (const h of c.hosts) n += h.requests + h.newConnections + h.host.length;
  }
  const r = details.resolver;
  if (r) {
    const found: boolean = r.found;
    n += r.ndots + r.timeout + r.attempts + r.path.length + (found ? 1 : 0);
    n += r.nameservers.length + r.search.length + r.options.length + r.hostsNames.length;
  }
  const e = details.eventloop;
  if (e) {
    const cpu: number | null = e.mainThreadCpuSeconds;
    const wait: number | null = e.mainThreadWaitSeconds;
    const blocked: number | null = e.blockedOnCpuMaxSeconds;
    n += (cpu ?? 0) + (wait ?? 0) + (blocked ?? 0);
  }
  const t = details.threadpool;
  if (t) {
    n += t.size + t.dnsSlots + t.pending.dns + t.pending.fs + (t.pending.crypto ?? 0);
    n += t.probes.dns ? t.probes.dns.maxWaitSeconds + t.probes.dns.inFlightSeconds : 0;
    if (t.busy.available) n += t.busy.threads + t.busy.computing + (t.busy.runnable ?? 0);
    else n += t.busy.reason.length;
  }
  // A sampler of a later version: its details are there, of a type not known here.
  const other: unknown = details['someSampler'];
  void other;
  return n;
}

function readFinding(f: Finding): string {
  const severity: 'info' | 'warning' | 'critical' = f.severity;
  const impact: FindingImpact = f.impact;
  const lost: number = impact.score + (impact.secondsPerSecond ?? 0) + (impact.requests ?? 0) + (impact.loopBlockedSeconds ?? 0);
  const evidence: unknown = f.evidence['hostname'];
  void evidence;
  return `${severity} ${f.id}: ${f.summary} (${lost} s/s) ${f.advice.join(' ')}`;
}

function readSnapshot(s: Snapshot): number {
  const when: Date = new Date(s.time);
  void when;
  let n = s.intervalMs;
  for (const p of s.points) n += readPoint(p);
  n += readDetails(s.details);
  for (const f of s.findings) readFinding(f);
  // @ts-expect-error points are read-only
  s.points.push({ name: 'x', attributes: {} });
  return n;
}

/** /snapshot.json lists the other processes served at the same endpoint under `processes`. */
function readProcesses(json: { processes?: ProcessSnapshot[] }): string[] {
  return (json.processes ?? []).map((p) => {
    for (const point of p.points) readPoint(point);
    return `${p.pid}${p.workerId === undefined ? '' : `/${p.workerId}`} at ${p.time} every ${p.intervalMs} ms: ${p.findings.map(readFinding).join('; ')}`;
  });
}
void readProcesses;

// --- the sampler and exporter contracts ---

const sampler: Sampler = {
  name: 'example',
  sample(tick: Tick): RawPoint[] {
    const handles: number = tick.resources.get('TCPSocketWrap') ?? 0;
    return [{ name: 'nodejs.uv.handles.active', attributes: { 'nodejs.uv.handle.type': 'TCPSocketWrap' }, value: handles }];
  },
  details: () => ({ seen: 1 }),
  endInterval() {},
  close() {},
};
void sampler;

function createLogExporter(context: ExporterContext): Exporter {
  const latest: Snapshot | null = context.latest();
  const now: Snapshot = context.sampleNow();
  const intervalMs: number = context.options.intervalMs;
  const published = Object.keys(context.channels.published).concat(Object.values(context.channels.subscribed));
  context.ownLookup('localhost', { family: 4 }, (err, address, family) => void [err, address, family]);
  const agent = context.ownAgent('https:', { keepAlive: true });
  if (context.server) {
    context.server.route('/example', (_req, res) => { res.end(String(intervalMs)); }, 'an example route');
    void context.server.ready.then((at) => at && `${at.host}:${at.port}`);
  }
  void [latest, now, published, agent];
  return { name: 'log', export(snapshot: Snapshot) { readSnapshot(snapshot); }, close: async () => {} };
}

// --- each exporter entry point: createExporter(context), the contract above ---

const entryPoints: ((context: ExporterContext) => Exporter)[] = [
  prometheusExporter.createExporter, otlpExporter.createExporter, datadogExporter.createExporter, createLogExporter,
];
void entryPoints;
