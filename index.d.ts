// Type declarations for uvscope's public API (require('uvscope')).

import type { Registry } from 'prom-client';

// The options of start(), generated from the settings rows each part declares (node scripts/docs.js).
// <generated: options>
export type ExporterName = 'prometheus' | 'otlp' | 'datadog';

export interface Options {
  /** do nothing: true/false, 1/0, yes/no, on/off (UVSCOPE_DISABLED, default false). */
  disabled?: boolean;
  /** the exporters to run: a comma-separated list of prometheus, otlp, datadog, or none (UVSCOPE_EXPORTERS, default prometheus). */
  exporters?: ExporterName[] | string;
  /** the sampling interval: an integer number of milliseconds from 50 to 3600000 (UVSCOPE_INTERVAL_MS, default 1000). */
  intervalMs?: number;
  /** the findings when the process exits: true/false, 1/0, yes/no, on/off (the text report on stderr), or a file path ending in .html (the page with the data embedded) (UVSCOPE_REPORT_ON_EXIT, default false). */
  reportOnExit?: boolean | string;
  /** Where /snapshot.json is served when Prometheus is off (with Prometheus on, it is on its server). */
  snapshot?: SnapshotOptions;
  /** Several processes of one app on one endpoint (cluster, PM2, NODE_OPTIONS children). */
  multiprocess?: MultiprocessOptions;
  /** The threadpool tracer (async_hooks). */
  tracer?: TracerOptions;
  /** The blockers options. */
  blockers?: BlockersOptions;
  /** The DNS source. */
  dns?: DnsOptions;
  /** The Prometheus exporter and the agent's HTTP endpoint (exporters/prometheus/). */
  prometheus?: PrometheusOptions;
  /** The OpenTelemetry (OTLP) exporter. */
  otlp?: OtlpOptions;
  /** The DogStatsD exporter. */
  datadog?: DatadogOptions;
}

/** Where /snapshot.json is served when Prometheus is off (with Prometheus on, it is on its server). */
export interface SnapshotOptions {
  /** where /snapshot.json is served when Prometheus is off: an IP address or hostname to listen on, e.g. 127.0.0.1 or 0.0.0.0 (UVSCOPE_SNAPSHOT_HOST, default 127.0.0.1). */
  host?: string;
  /** its port (0 picks a free one): an integer port from 0 to 65535 (UVSCOPE_SNAPSHOT_PORT, default 9464). */
  port?: number;
}

/** Several processes of one app on one endpoint (cluster, PM2, NODE_OPTIONS children). */
export interface MultiprocessOptions {
  /** several processes of one app on one endpoint: true/false, 1/0, yes/no, on/off (true: a process that finds the endpoint's port held by another uvscope process sends its figures there) (UVSCOPE_MULTIPROCESS, default true). */
  aggregate?: boolean;
  /** other processes the endpoint serves at once: an integer from 1 to 4096 (UVSCOPE_MULTIPROCESS_MAX_PROCESSES, default 128). */
  maxProcesses?: number;
  /** how long the series of a process that stopped sending stay: an integer number of milliseconds from 1000 to 86400000 (default: 3 sampling intervals of that process) (UVSCOPE_MULTIPROCESS_TTL_MS). */
  ttlMs?: number;
}

/** The threadpool tracer (async_hooks). */
export interface TracerOptions {
  /** the threadpool tracer (async_hooks): auto (armed for a window when the pool is held), on or off (UVSCOPE_TRACER, default auto). */
  mode?: 'auto' | 'on' | 'off';
  /** an integer number of milliseconds from 1 to 600000 (a probe's wait for a thread, beyond the event loop's own delay, that arms the tracer) (UVSCOPE_TRACER_THRESHOLD_MS, default 50). */
  thresholdMs?: number;
  /** an integer number of milliseconds from 100 to 3600000 (how long auto mode stays armed) (UVSCOPE_TRACER_WINDOW_MS, default 10000). */
  windowMs?: number;
  /** an integer number of milliseconds from 0 to 86400000 (time disarmed before auto mode may arm again) (UVSCOPE_TRACER_COOLDOWN_MS, default 90000). */
  cooldownMs?: number;
}

/** The blockers options. */
export interface BlockersOptions {
  /** the capture of what blocked the event loop: a watchdog thread reads the main thread's CPU time in /proc and, while a block lasts, samples its JavaScript stack (Sentry's native capture; each sample stops the main thread about 0.1 ms); Linux. auto (the default): nothing of it runs until an interval's event-loop delay, less the main thread's wait for a CPU (and, where it waited off the CPU for its own threads, their wait for one: a starved process is not a block), reaches the threshold; then it starts (the blocks of that interval are timed, not seen into) and stops after 10 minutes without a block, its worker's memory (+10 MB of RSS on Node 20, +18 MB on Node 24, docs/cost.md) returned. on: always running; off: never: auto, on or off (UVSCOPE_BLOCKERS, default auto). */
  mode?: 'auto' | 'on' | 'off';
  /** an integer number of milliseconds from 20 to 60000 (a block at least this long is captured) (UVSCOPE_BLOCKERS_THRESHOLD_MS, default 100). */
  thresholdMs?: number;
}

/** The DNS source. */
export interface DnsOptions {
  /** distinct hostnames kept as labels; later ones count as _other (each kept name costs about 10 KB): an integer from 1 to 100000 (UVSCOPE_DNS_MAX_NAMES, default 100). */
  maxNames?: number;
}

/** The Prometheus exporter and the agent's HTTP endpoint (exporters/prometheus/). */
export interface PrometheusOptions {
  /** the address the metrics server listens on: an IP address or hostname to listen on, e.g. 127.0.0.1 or 0.0.0.0 (UVSCOPE_PROMETHEUS_HOST, default 127.0.0.1). */
  host?: string;
  /** the port of the metrics server (0 picks a free one): an integer port from 0 to 65535 (UVSCOPE_PROMETHEUS_PORT, default 9464). */
  port?: number;
  /** put uvscope's metrics into this registry instead (no server is opened): a Registry of prom-client 15 or @prometheus-io/client 0.16. */
  registry?: Registry;
}

/** The OpenTelemetry (OTLP) exporter. */
export interface OtlpOptions {
  /** where OTLP metrics go: auto (the app's global MeterProvider if it registers one, else uvscope's own), companion or standalone (UVSCOPE_OTLP_MODE, default auto). */
  mode?: 'auto' | 'companion' | 'standalone';
  /** whether to export nodejs.eventloop.* and v8js.*: auto (off when @opentelemetry/instrumentation-runtime-node is loaded), on or off (or true/false, 1/0, yes/no, on/off) (UVSCOPE_OTLP_RUNTIME_METRICS, default auto). */
  runtimeMetrics?: 'auto' | 'on' | 'off';
  /** put uvscope's context on OpenTelemetry dns.lookup spans: true/false, 1/0, yes/no, on/off (UVSCOPE_OTLP_TRACE_ATTRIBUTES, default true). */
  traceAttributes?: boolean;
}

/** The DogStatsD exporter. */
export interface DatadogOptions {
  /** where the Datadog Agent listens, as dd-trace reads it: udp://host[:port], unix:///path/to/dsd.socket or unixgram:///path/to/dsd.socket (DD_DOGSTATSD_URL). */
  url?: string;
  /** the Datadog Agent's host: the Datadog Agent's hostname or IP address (DD_DOGSTATSD_HOST / DD_AGENT_HOST, default localhost). */
  host?: string;
  /** the Datadog Agent's DogStatsD port: an integer port from 1 to 65535 (DD_DOGSTATSD_PORT, default 8125). */
  port?: number;
  /** unified service tagging (service:<name> on every metric): a non-empty name of at most 200 characters (DD_SERVICE). */
  service?: string;
  /** unified service tagging (env:<name> on every metric): a non-empty name of at most 200 characters (DD_ENV). */
  env?: string;
  /** unified service tagging (version:<name> on every metric): a non-empty name of at most 200 characters (DD_VERSION). */
  version?: string;
  /** extra tags on every metric: tags separated by commas or spaces, e.g. team:dns,region:eu (no | or #) (DD_TAGS). */
  tags?: string[] | string;
  /** how often gauges and counts are sent: an integer number of milliseconds from 1000 to 3600000 (UVSCOPE_DATADOG_FLUSH_INTERVAL_MS, default 10000). */
  flushIntervalMs?: number;
  /** how often the Agent's hostname is looked up again: an integer number of milliseconds from 1000 to 86400000 (UVSCOPE_DATADOG_DNS_REFRESH_MS, default 60000). */
  dnsRefreshMs?: number;
  /** lookup durations sent unsampled per second; above it they carry a sample rate: an integer from 1 to 100000 (UVSCOPE_DATADOG_MAX_LOOKUPS_PER_SECOND, default 200). */
  maxLookupsPerSecond?: number;
  /** whether to send nodejs.eventloop.* and v8js.* (heap, GC): auto (off when dd-trace runtime metrics are on), or true/false, 1/0, yes/no, on/off (UVSCOPE_DATADOG_EVENT_LOOP, default auto). */
  eventLoop?: 'auto' | boolean;
  /** tag dd-trace's dns.lookup spans with uvscope's context: true/false, 1/0, yes/no, on/off (UVSCOPE_DATADOG_TRACE_TAGS, default true). */
  traceTags?: boolean;
  /** send through this client instead of uvscope's own: a hot-shots StatsD client (gauge, increment and distribution methods). */
  client?: import('hot-shots').StatsD;
}
// </generated>

/** What a finding's cause cost in the findings window. */
export interface FindingImpact {
  /** Seconds callers lost per second of the window. */
  readonly secondsPerSecond?: number;
  /** Lookups or requests affected. */
  readonly requests?: number;
  /** Seconds the event loop was blocked (a lower bound). */
  readonly loopBlockedSeconds?: number;
  /** Seconds lost per second; severity follows from it and findings are sorted by it. */
  readonly score: number;
}

export interface Finding {
  readonly id: string;
  readonly severity: 'info' | 'warning' | 'critical';
  readonly summary: string;
  readonly evidence: Readonly<Record<string, unknown>>;
  readonly advice: readonly string[];
  readonly impact: FindingImpact;
}

export interface HistogramData {
  readonly bounds: readonly number[];
  /** Per-bucket (not cumulative) counts; the last is the overflow (+Inf) bucket. */
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
}

export interface Point {
  /** Canonical dotted metric name from the catalog, e.g. 'dns.lookup.duration'. */
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly value?: number;
  readonly histogram?: HistogramData;
}

/** One hostname's figures (snapshot.details.dns.hosts[]): interval figures since the last sample. */
export interface DnsHostDetails {
  readonly name: string;
  readonly lookups: number;
  readonly errors: number;
  /** Sum of the durations of lookups that ended in the interval. */
  readonly seconds: number;
  readonly maxSeconds: number;
  /** Lookups started while another of the same name was in flight. */
  readonly duplicates: number;
  readonly maxInFlight: number;
  /** Lookups that waited for at least one resolv.conf timeout. */
  readonly timeouts: number;
  readonly inFlight: number;
  readonly totalLookups: number;
  /** Lookups that ended in the interval: what seconds, queueWaitSeconds and resolveSeconds sum over. */
  readonly endedLookups: number;
  /** Seconds the interval's lookups waited for a DNS slot of the threadpool. */
  readonly queueWaitSeconds: number;
  /** Seconds the interval's lookups took once they had a slot (getaddrinfo itself). */
  readonly resolveSeconds: number;
  /** The interval's lookups that waited for a DNS slot. */
  readonly queuedLookups: number;
  /** Lookups in the recent window that p50, p99, stddev, mean and tail cover. */
  readonly recentLookups: number;
  /** Seconds, over the recent window; null while the name has no recent lookup. */
  readonly p50: number | null;
  readonly p99: number | null;
  readonly stddev: number | null;
  readonly mean: number | null;
  /** The slowest 1 % of the recent window (at least one lookup), null while there is none. */
  readonly tail: DnsTail | null;
  /** Sampled calling frames ('pkg' or 'file:line'), most frequent first. */
  readonly callers: readonly { caller: string; count: number; seconds: number }[];
}

/** snapshot.details.dns.hosts[].tail: what the slowest lookups spent waiting and resolving, each on average. */
export interface DnsTail {
  readonly lookups: number;
  readonly meanSeconds: number;
  readonly queueWaitSeconds: number;
  readonly resolveSeconds: number;
}

/** snapshot.details.threadpool: the pool's figures at the last sample. */
export interface ThreadpoolDetails {
  readonly size: number;
  readonly dnsSlots: number;
  /** Jobs submitted and not completed by kind; crypto, zlib and other only while the tracer is armed. */
  readonly pending: Readonly<{ dns: number; fs: number; crypto?: number; zlib?: number; other?: number }>;
  /**
   * The probes' figures for the interval (work: where crypto.randomFill exists): the longest wait,
   * the wait so far of a probe still in flight, and the longest of either the event loop spent
   * idle (heldSeconds: the wait the loop's own delay does not explain, lib/core/pool-held.js).
   */
  readonly probes: Readonly<Partial<Record<'dns' | 'work', Readonly<{ maxWaitSeconds: number; inFlightSeconds: number; heldSeconds: number }>>>>;
  /** CPU of the pool's threads (Linux, libuv 1.50+), per second of the interval; null where the kernel does not tell. */
  readonly busy:
    | Readonly<{ available: true; threads: number; computing: number; runnable: number | null; schedulings: number | null; meanWaitSeconds: number | null }>
    | Readonly<{ available: false; reason: string }>;
  /** The threadpool tracer's state and the jobs it saw in the interval. */
  readonly tracer: Readonly<Record<string, unknown>>;
}

/** snapshot.details: per-sampler figures for the last interval, by sampler name. */
export interface SnapshotDetails {
  readonly dns?: {
    readonly inFlight: number;
    /** Threads that may run getaddrinfo at once ((UV_THREADPOOL_SIZE+1)/2), as the lookups' wait was modelled. */
    readonly dnsSlots: number;
    readonly hosts: readonly DnsHostDetails[];
  };
  readonly connections?: {
    readonly connections: number;
    /** Seconds the interval's connections took to connect (DNS included). */
    readonly connectSeconds: number;
    readonly requests: number;
    readonly newConnections: number;
    readonly hosts: readonly { host: string; requests: number; newConnections: number }[];
  };
  /**
   * Seconds the main thread ran on a CPU and waited for one in the interval, and the interval's
   * longest loop lateness less that wait (a lower bound of what the app blocked); null where the
   * platform does not tell (Linux only).
   */
  readonly eventloop?: Readonly<{ mainThreadCpuSeconds: number | null; mainThreadWaitSeconds: number | null; blockedOnCpuMaxSeconds: number | null; processCpuSeconds: number | null }>;
  readonly threadpool?: ThreadpoolDetails | null;
  /**
   * The CPU budget (process.cpu.budget: a cgroup CPU quota or the affinity mask, whichever is
   * smaller), the process's CPU time so far (process.cpuUsage()) and, under a quota, the
   * cumulative throttling counters of the cgroup whose quota binds (its cpu.stat).
   */
  readonly cpu?: Readonly<{
    cpus: number; quotaCpus: number | null; affinityCpus: number; source: 'cgroup-v2' | 'cgroup-v1' | 'affinity';
    processCpuTotalSeconds: number; throttling: Readonly<{ periods: number; throttledPeriods: number; throttledSeconds: number }> | null;
  }> | null;
  /** resolv.conf as glibc reads it, and up to 1000 of the names /etc/hosts answers. */
  readonly resolver?: Readonly<{ path: string; found: boolean; nameservers: string[]; search: string[]; ndots: number; timeout: number; attempts: number; options: string[]; hostsNames: string[] }>;
  readonly [sampler: string]: unknown;
}

/**
 * One sample, read-only. The per-hostname DNS figures (the histograms of dns.lookup.duration and
 * nodejs.dns.lookup.queue_wait points, details.dns.hosts[] and their tail) are updated in place by
 * the next sample: copy what you keep past it.
 */
export interface Snapshot {
  readonly time: number;
  readonly intervalMs: number;
  readonly points: readonly Point[];
  /** Per-sampler details (per-hostname DNS figures, connections, resolv.conf). */
  readonly details: SnapshotDetails;
  readonly findings: readonly Finding[];
}

/** Another process served at the same endpoint, as /snapshot.json lists it under `processes`. */
export interface ProcessSnapshot {
  readonly pid: number;
  /** The node:cluster worker id, for a cluster worker. */
  readonly workerId?: string;
  readonly time: number;
  readonly intervalMs: number;
  readonly points: readonly Point[];
  readonly findings: readonly Finding[];
}

export interface MetricDef {
  readonly name: string;
  readonly type: 'gauge' | 'counter' | 'histogram';
  readonly unit: string;
  readonly attributes: readonly string[];
  readonly help: string;
  readonly buckets?: readonly number[];
  /** Recorded one observation per event, from a channel uvscope publishes (lib/core/channels.js). */
  readonly perEvent?: Readonly<{ channel: string; value: string; attributes: Readonly<Record<string, string>> }>;
  /** A histogram that gains at most one observation per series between two samples (a probe). */
  readonly onePerSample?: true;
  /** The interval gauges that carry this histogram where cumulative buckets cannot go. */
  readonly intervalGauges?: readonly string[];
  /** A runtime-metrics package the app may run (runtime-node, dd-trace) sends it too: left out next to it. */
  readonly runtimeMetrics?: true;
}

/** What every sample hands each sampler. */
export interface Tick {
  /** process.getActiveResourcesInfo() counted by type. */
  readonly resources: ReadonlyMap<string, number>;
}

/** A point as a sampler returns it (the agent freezes it into the snapshot). */
export interface RawPoint {
  name: string;
  attributes: Record<string, string>;
  value?: number;
  histogram?: HistogramData;
}

/**
 * The sampler contract (lib/sources/index.js holds the list). At every sample the agent calls
 * sample(tick) on each sampler, then details() on each that has it, then endInterval().
 */
export interface Sampler {
  readonly name: string;
  sample(tick: Tick): RawPoint[];
  /** Plain JSON figures for the interval since the last endInterval() (snapshot.details[name]); no side effect. */
  details?(): unknown;
  /** Starts a new interval; called once per sample, after details() of every sampler. */
  endInterval?(): void;
  close(): void;
}

/** The exporter contract (exporters/index.js holds the list; each exporter is exporters/<name>/). */
export interface Exporter {
  readonly name: string;
  /** Push exporters: called with every new snapshot. Pull exporters read context.latest(). */
  export?(snapshot: Snapshot): void;
  close(): void | Promise<void>;
}

/** What an exporter's createExporter(context) is given, instead of the Agent. */
export interface ExporterContext {
  readonly options: Agent['options'];
  /** The last snapshot, or null before the first sample. */
  latest(): Snapshot | null;
  /** Take a sample now (e.g. a last one before exit). */
  sampleNow(): Snapshot;
  /** The diagnostics channels uvscope publishes and subscribes to (lib/core/channels.js). */
  readonly channels: { readonly published: Readonly<Record<string, import('diagnostics_channel').Channel>>; readonly subscribed: Readonly<Record<string, string>> };
  /** dns.lookup as it was before uvscope wrapped it: the exporter's own lookups are not counted as the app's. */
  readonly ownLookup: (hostname: string, options: object, callback: (err: Error | null, address: string, family: number) => void) => void;
  /** An http(s) Agent for the exporter's own requests, not counted as the app's. */
  ownAgent(protocol: 'http:' | 'https:', options?: object): import('http').Agent;
  /** The agent's HTTP endpoint, to add routes to; null when it opens none. */
  readonly server: {
    route(path: string, handler: (req: import('http').IncomingMessage, res: import('http').ServerResponse) => void | Promise<void>, description?: string): void;
    readonly ready: Promise<{ host: string; port: number } | null>;
  } | null;
}

export interface Agent {
  readonly options: Readonly<Required<Omit<Options, 'prometheus' | 'dns' | 'exporters' | 'snapshot'>>> & {
    readonly exporters: readonly ExporterName[];
    readonly prometheus: Readonly<PrometheusOptions>;
    readonly snapshot: Readonly<{ host: string; port: number }>;
    readonly dns: Readonly<{ maxNames: number }>;
  };
  /** The last snapshot, or null before the first sample. */
  readonly latest: Snapshot | null;
  /** Take a sample now (also done every intervalMs). */
  sampleNow(): Snapshot;
}

/** Start the agent once per process; options override UVSCOPE_* variables. Never throws. */
export function start(options?: Options): Agent | null;
/**
 * What `--require uvscope/register` runs: start() with the environment's settings, its second
 * phase (exporters, most samplers) deferred to the first timer tick after the app's top-level code.
 */
export function preload(): Agent | null;
/** Stop the agent: timers cleared, server closed, dns.lookup restored. */
export function stop(): Promise<void>;
/** The running agent, if any. */
export function getAgent(): Agent | null;
/** The metric catalog. */
export const catalog: readonly MetricDef[];
