'use strict';

// Job types as the tracer reports them, named as the API a developer calls: for the findings'
// text (lib/findings/found/pool.js) and the report's and page's words for other work that held
// the pool (lib/report/pool-words.js, which the page gets as source with these names, so
// they are not in found/, which a served page must not load).

const { POOL_PROVIDERS } = require('../sources/threadpool/providers');

/** Provider types of threadpool work (lib/sources/threadpool/providers.js) as the API a developer calls. */
const TYPE_NAMES = Object.freeze(Object.fromEntries(Object.entries(POOL_PROVIDERS).map(([type, { api }]) => [type, api])));

/**
 * A readable name for a job type as the tracer reports it.
 * @param {string} type provider type (PBKDF2REQUEST) or an addon's resource name
 */
function typeName(type) {
  return TYPE_NAMES[String(type).toUpperCase()] || String(type);
}

module.exports = { TYPE_NAMES, typeName };
