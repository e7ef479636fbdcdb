// Type declarations for uvscope's exporter entry points (require('uvscope/exporters/<name>'), one
// for every name of ExporterName): package.json maps each to this file. An exporter is built from
// the agent's narrow context, never the Agent (see Exporter and ExporterContext in index.d.ts).

import type { Exporter, ExporterContext } from '../index';

/** Create this exporter; a push exporter gets export(snapshot) after every sample. */
export function createExporter(context: ExporterContext): Exporter;
