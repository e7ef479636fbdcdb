// @ts-check
'use strict';

// How the preload loads uvscope's own files: Node's loader resolves every relative require() of
// every file (path.resolve, stats, realpath, a walk up for package.json), and over the preload's
// few dozen files that work makes path.resolve hot enough for V8 to optimize it, which pages in the
// optimizing compiler (several MB of RSS, ms of CPU). Here a relative require() inside the package
// is resolved with string operations and a cache lookup, and the file is compiled by Node itself
// (Module.prototype._compile: its wrapper, its compile cache where enabled, the real filename in
// stack traces) into a real Module registered in require.cache under the same path Node's loader
// would use, so `require('uvscope')` by the app later gets the same instances. Anything else
// (builtins, packages, paths outside the package) goes to Node's loader as usual, through
// Module.prototype.require at call time, so require hooks (APM tools) still see it.

// The CommonJS Module class, which require('module') returns: taken from this module's object, as
// require('module') would load the public module builtin and, on Node 20 for an app run from a
// file, the ESM loader with it (~1.5 ms of CPU: bench/startup.js).
const Module = typeof module.constructor === 'function' && typeof /** @type {any} */ (module.constructor)._nodeModulePaths === 'function'
  ? /** @type {typeof import('module')} */ (module.constructor)
  : require('module');
const fs = require('fs');

// Node's own CommonJS loader sets `require` to call module.require(id) on the module it compiles
// (lib/internal/modules/helpers.js makeRequireFunction, Node 20 to 26): an own `require` on the
// module object routes the file's require() here. What it does not resolve goes to
// Module.prototype.require as it is at that moment (an APM tool may have wrapped it since).

/**
 * Load one of uvscope's files, and the relative requires inside the package it makes (now or
 * later), without Node's resolution. Where paths are not '/' separated, Node's loader does it all.
 * @param {string} root the package's directory (register.js's __dirname)
 * @param {string} file a path relative to root, e.g. 'lib/index.js'
 * @returns {any} the module's exports
 */
function loadFromPackage(root, file) {
  if (require('path').sep !== '/') return require(`${root}/${file}`);
  return loadFile(root, `${root}/${file}`, null);
}

/**
 * @param {string} root
 * @param {string} filename absolute, '/' separated, normalized
 * @param {InstanceType<typeof Module> | null} parent
 */
function loadFile(root, filename, parent) {
  const cached = require.cache[filename];
  if (cached) return cached.exports;
  const source = fs.readFileSync(filename, 'utf8');
  // Module(id) takes path.dirname(id): known here, so not computed (fewer calls that make path's
  // helpers hot enough for V8 to optimize them in the preload, see above).
  const mod = new Module('', parent);
  mod.id = filename;
  mod.path = filename.slice(0, filename.lastIndexOf('/'));
  mod.filename = filename;
  lazyPaths(mod);
  // What each id resolved to (null: Node's loader): the lazy require()s inside getters and
  // per-sample code run every sample, and resolving builds strings every time.
  /** @type {Map<string, string | null>} */
  const resolved = new Map();
  mod.require = function require(id) {
    let target = null;
    if (typeof id === 'string') {
      target = resolved.get(id);
      if (target === undefined) resolved.set(id, (target = inPackage(root, mod.path, id)));
    }
    return target ? loadFile(root, target, mod) : Module.prototype.require.call(mod, id);
  };
  require.cache[filename] = mod;
  let done = false;
  try {
    /** @type {any} */ (mod)._compile(source, filename, 'commonjs');
    done = true;
  } finally {
    if (!done) delete require.cache[filename];
  }
  mod.loaded = true;
  return mod.exports;
}

/**
 * The file a relative require() names, when it is inside the package and a .js file (or a folder's
 * index.js); null for anything Node's loader should resolve.
 * @param {string} root
 * @param {string} dir the requiring module's directory
 * @param {string} id
 * @returns {string | null}
 */
function inPackage(root, dir, id) {
  if (!(id.startsWith('./') || id.startsWith('../'))) return null;
  let base = dir;
  for (const part of id.split('/')) {
    if (part === '.' || part === '') continue;
    if (part === '..') base = base.slice(0, base.lastIndexOf('/'));
    else base = `${base}/${part}`;
  }
  if (!base.startsWith(`${root}/`) || base.endsWith('.json') || base.endsWith('.node')) return null;
  if (base.endsWith('.js')) return isFile(base) ? base : null;
  if (isFile(`${base}.js`)) return `${base}.js`;
  if (isFile(`${base}/index.js`)) return `${base}/index.js`;
  return null;
}

/** @param {string} file */
function isFile(file) {
  // existsSync: an access() call, no Stats object (the package's own files are never folders named *.js).
  return Boolean(require.cache[file]) || fs.existsSync(file);
}

/**
 * module.paths (where a bare require() looks for packages), computed when first read: only a file
 * that requires a package needs it.
 * @param {InstanceType<typeof Module>} mod
 */
function lazyPaths(mod) {
  /** @type {string[] | undefined} */
  let paths;
  Object.defineProperty(mod, 'paths', {
    configurable: true,
    enumerable: true,
    get: () => (paths === undefined ? (paths = /** @type {any} */ (Module)._nodeModulePaths(mod.path)) : paths),
    set: (value) => { paths = value; },
  });
}

module.exports = { loadFromPackage };
