'use strict';

const path = require('path');

const ROOT = path.resolve(__dirname, '..', '..');
// uvscope's own code (not its tests or examples, which stand in for apps).
const OWN = [path.join(ROOT, 'lib') + path.sep, path.join(ROOT, 'exporters') + path.sep, path.join(ROOT, 'register.js')];
// Instrumentation that wraps dns.lookup (tracers, their hooks) and the OpenTelemetry SDK and API
// (a span processor runs inside tracer.startSpan): frames there are not the caller.
const INSTRUMENTATION = /[\\/]node_modules[\\/](dd-trace|dc-polyfill|@datadog[\\/][^\\/]+|@opentelemetry[\\/](?:instrumentation[^\\/]*|sdk-trace[^\\/]*|api)|require-in-the-middle|import-in-the-middle|shimmer)[\\/]/;

/**
 * The app's call site of the current call: the first stack frame outside Node's internals,
 * uvscope and tracers' instrumentation (dd-trace, OpenTelemetry instrumentations), reduced to its
 * package name (for code under node_modules) or file:line.
 * Costs a stack capture (some microseconds): callers sample it.
 * @returns {string} e.g. 'hot-shots', 'src/client.js:42', or '(unknown)'
 */
function captureCaller() {
  const holder = {};
  const limit = Error.stackTraceLimit;
  const prepare = Error.prepareStackTrace;
  try {
    Error.stackTraceLimit = 40; // tracers' wrappers add frames before the app's
    // Structured call sites for this one capture only; the app's own prepareStackTrace (source
    // maps, say) is put back before anything else runs.
    Error.prepareStackTrace = (_, frames) => frames;
    Error.captureStackTrace(holder, captureCaller);
    const frames = holder.stack;
    if (!Array.isArray(frames)) return '(unknown)';
    for (const frame of frames) {
      const file = frame.getFileName();
      if (!file || file.startsWith('node:') || !file.includes('/') && !file.includes('\\')) continue;
      const filePath = file.startsWith('file://') ? safeFileURLToPath(file) : file;
      if (OWN.some((own) => filePath.startsWith(own)) || INSTRUMENTATION.test(filePath)) continue;
      return describe(filePath, frame.getLineNumber());
    }
    return '(unknown)';
  } catch {
    return '(unknown)';
  } finally {
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
  }
}

/**
 * A package name for a file under node_modules, else the path relative to cwd with its line.
 * @param {string} file
 * @param {number|null} line
 */
function describe(file, line) {
  const parts = file.split(/[\\/]/);
  const nm = parts.lastIndexOf('node_modules');
  if (nm !== -1 && nm + 1 < parts.length) {
    const first = parts[nm + 1];
    return first.startsWith('@') && nm + 2 < parts.length ? `${first}/${parts[nm + 2]}` : first;
  }
  const rel = path.relative(process.cwd(), file);
  return `${rel.startsWith('..') ? file : rel}:${line || 0}`;
}

function safeFileURLToPath(url) {
  try {
    return require('url').fileURLToPath(url);
  } catch {
    return url;
  }
}

module.exports = { captureCaller, describe };
