// Type declarations for uvscope's public API (require('uvscope')).

import type { Registry } from 'prom-client';

export type ExporterName = 'prometheus';

export interface PrometheusOptions {
  /** Address the metrics server listens on (UVSCOPE_PROMETHEUS_HOST, default 127.0.0.1). */
  host?: string;
  /** Port of the metrics server (UVSCOPE_PROMETHEUS_PORT, default 9464; 0 picks a free one). */
  port?: number;
  /** Put uvscope's metrics into this prom-client registry instead; no server is opened. */
  registry?: Registry;
}

export interface Options {
  /** Do nothing (UVSCOPE_DISABLED). */
  disabled?: boolean;
  /** Exporters to run, or 'none' (UVSCOPE_EXPORTERS, default 'prometheus'). */
  exporters?: ExporterName[] | string;
  /** Sampling interval in milliseconds, 50 to 3600000 (UVSCOPE_INTERVAL_MS, default 1000). */
  intervalMs?: number;
  prometheus?: PrometheusOptions;
  dns?: {
    /** Distinct hostnames kept as labels; the rest count as _other (UVSCOPE_DNS_MAX_NAMES, default 100). */
    maxNames?: number;
  };
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

export interface Snapshot {
  readonly time: number;
  readonly intervalMs: number;
  readonly points: readonly Point[];
}

export interface MetricDef {
  readonly name: string;
  readonly type: 'gauge' | 'counter' | 'histogram';
  readonly unit: string;
  readonly attributes: readonly string[];
  readonly help: string;
  readonly buckets?: readonly number[];
}

export interface Agent {
  readonly options: Readonly<Required<Omit<Options, 'prometheus' | 'dns' | 'exporters'>>> & {
    readonly exporters: readonly ExporterName[];
    readonly prometheus: Readonly<PrometheusOptions>;
    readonly dns: Readonly<{ maxNames: number }>;
  };
  /** The last snapshot, or null before the first sample. */
  readonly latest: Snapshot | null;
  /** Take a sample now (also done every intervalMs). */
  sampleNow(): Snapshot;
}

/** Start the agent once per process; options override UVSCOPE_* variables. Never throws. */
export function start(options?: Options): Agent | null;
/** Stop the agent: timers cleared, server closed, dns.lookup restored. */
export function stop(): Promise<void>;
/** The running agent, if any. */
export function getAgent(): Agent | null;
/** The metric catalog. */
export const catalog: readonly MetricDef[];
