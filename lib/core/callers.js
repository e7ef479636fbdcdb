'use strict';

const path = require('path');

// __dirname is absolute and normalized, so dirname and concatenation give what path.resolve and
// path.join would, without their normalizeString (made hot in the preload, it is what V8's Maglev
// compiles: bench/startup.js).
const ROOT = path.dirname(path.dirname(__dirname));
// uvscope's own code (not its tests or examples, which stand in for apps).
const OWN = [`${ROOT}${path.sep}lib${path.sep}`, `${ROOT}${path.sep}exporters${path.sep}`, `${ROOT}${path.sep}register.js`];
// Instrumentation that wraps dns.lookup (tracers, their hooks) and the OpenTelemetry SDK and API
// (a span processor runs inside tracer.startSpan): frames there are not the caller.
const INSTRUMENTATION = /[\\/]node_modules[\\/](dd-trace|dc-polyfill|@datadog[\\/][^\\/]+|@opentelemetry[\\/](?:instrumentation[^\\/]*|sdk-trace[^\\/]*|api)|require-in-the-middle|import-in-the-middle|shimmer)[\\/]/;

// A caller per file and line, as described() gives it, so that a capture makes no strings once
// its call site has been seen: file name as V8 gives it -> null (not the app's: Node's internals,
// uvscope, instrumentation) or Map(line -> caller). Bounded; emptied when the cwd changes, since
// the file:line form is relative to it.
const described = new Map();
const MAX_FILES = 1000;
const MAX_LINES = 1000;
let describedCwd = null;
// A stack of this many frames is captured first; only when none of them is the app's and the
// stack went deeper is it captured again with CAPTURE_DEEP frames (tracers' wrappers add frames
// before the app's). Either way the first app frame of the deep stack is the one found.
const CAPTURE_FIRST = 10;
const CAPTURE_DEEP = 40;

/**
 * The app's call site of the current call: the first stack frame outside Node's internals,
 * uvscope and tracers' instrumentation (dd-trace, OpenTelemetry instrumentations), reduced to its
 * package name (for code under node_modules) or file:line.
 * Costs a stack capture (some microseconds): callers sample it.
 * @returns {string} e.g. 'hot-shots', 'src/client.js:42', or '(unknown)'
 */
function captureCaller() {
  return withCallSites(readCaller, '(unknown)');
}

function readCaller() {
  let found = firstAppFrame(CAPTURE_FIRST);
  if (found === undefined) found = firstAppFrame(CAPTURE_DEEP);
  return typeof found === 'string' ? found : '(unknown)';
}

/**
 * read() with structured call sites for its captures only, or fallback where it throws: the
 * app's own prepareStackTrace (source maps, say) and stack limit are put back before anything
 * else runs. The frames' descriptions are cached per working directory.
 * @template T
 * @param {() => T} read
 * @param {T} fallback
 * @returns {T}
 */
function withCallSites(read, fallback) {
  const limit = Error.stackTraceLimit;
  const prepare = Error.prepareStackTrace;
  try {
    Error.prepareStackTrace = callSites;
    const cwd = process.cwd();
    if (cwd !== describedCwd) {
      described.clear();
      describedCwd = cwd;
    }
    return read();
  } catch {
    return fallback;
  } finally {
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
  }
}

/**
 * The package that made the current call and the app's call into it: the first stack frame
 * outside Node's internals, uvscope and instrumentation, when it is under node_modules, reduced to
 * its package name (scoped too), and the first frame after it outside that package (the app's
 * own file:line, or the package that called it). For addon work whose resource name says nothing
 * (node-addon-api's AsyncWorker default, `generic`): the package that submitted it names it.
 * Costs a stack capture (some microseconds) of up to CAPTURE_DEEP frames.
 * @returns {{ pkg: string|null, caller: string }} pkg null when the first frame is the app's own
 */
function capturePackageCaller() {
  return withCallSites(readPackageCaller, UNKNOWN_PACKAGE);
}

const UNKNOWN_PACKAGE = Object.freeze({ pkg: null, caller: '(unknown)' });

function readPackageCaller() {
  return packageFrames(CAPTURE_FIRST) || packageFrames(CAPTURE_DEEP) || UNKNOWN_PACKAGE;
}

// The package and the app's call into it in a stack of at most `depth` frames; null when the
// stack may go deeper than that without both.
function packageFrames(depth) {
  const holder = {};
  Error.stackTraceLimit = depth;
  Error.captureStackTrace(holder, capturePackageCaller);
  const frames = holder.stack;
  if (!Array.isArray(frames)) return null;
  let pkg = null;
  for (let i = 0; i < frames.length; i++) {
    const where = callerOf(frames[i]);
    if (where === null) continue;
    // A package name has no ':line' (describe()).
    if (pkg === null) {
      if (where.includes(':')) return { pkg: null, caller: where };
      pkg = where;
    } else if (where !== pkg) return { pkg, caller: where };
  }
  if (frames.length >= depth && depth < CAPTURE_DEEP) return null;
  return { pkg, caller: pkg || '(unknown)' };
}

function callSites(_, frames) {
  return frames;
}

// The caller in a stack of at most `depth` frames; undefined when the stack may go deeper than
// that without one, null when it holds none.
function firstAppFrame(depth) {
  const holder = {};
  Error.stackTraceLimit = depth;
  Error.captureStackTrace(holder, captureCaller);
  const frames = holder.stack;
  if (!Array.isArray(frames)) return null;
  for (let i = 0; i < frames.length; i++) {
    const caller = callerOf(frames[i]);
    if (caller !== null) return caller;
  }
  return frames.length >= depth && depth < CAPTURE_DEEP ? undefined : null;
}

// A frame as a caller (described()'s), or null when it is not the app's.
function callerOf(frame) {
  const file = frame.getFileName();
  if (!file) return null;
  let lines = described.get(file);
  if (lines === undefined) {
    if (described.size >= MAX_FILES) described.clear();
    described.set(file, (lines = isAppFile(file) ? new Map() : null));
  }
  if (lines === null) return null;
  const line = frame.getLineNumber();
  let caller = lines.get(line);
  if (caller === undefined) {
    caller = describe(toPath(file), line);
    if (lines.size < MAX_LINES) lines.set(line, caller);
  }
  return caller;
}

// Whether a file (as V8 names it) is the app's: not Node's internals, uvscope or instrumentation.
function isAppFile(file) {
  if (file.startsWith('node:') || !file.includes('/') && !file.includes('\\')) return false;
  const filePath = toPath(file);
  for (let i = 0; i < OWN.length; i++) if (filePath.startsWith(OWN[i])) return false;
  return !INSTRUMENTATION.test(filePath);
}

function toPath(file) {
  return file.startsWith('file://') ? safeFileURLToPath(file) : file;
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

module.exports = { captureCaller, capturePackageCaller, describe };
