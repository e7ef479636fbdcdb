'use strict';

// Job types as the tracer reports them, named as the API a developer calls: for the findings'
// text (lib/findings/found/pool.js) and the report's and page's words for other work that held
// the pool (lib/report/other-pool-work.js, which the page gets as source with these names, so
// they are not in found/, which a served page must not load).

/** Provider types (Node's src/async_wrap.h) as the API a developer calls. */
const TYPE_NAMES = Object.freeze({
  PBKDF2REQUEST: 'pbkdf2',
  SCRYPTREQUEST: 'scrypt',
  RANDOMBYTESREQUEST: 'randomBytes/randomFill',
  RANDOMPRIMEREQUEST: 'generatePrime',
  CHECKPRIMEREQUEST: 'checkPrime',
  KEYPAIRGENREQUEST: 'generateKeyPair',
  KEYGENREQUEST: 'generateKey',
  HKDFREQUEST: 'hkdf',
  DERIVEBITSREQUEST: 'webcrypto deriveBits',
  SIGNREQUEST: 'sign/verify (webcrypto)',
  HASHREQUEST: 'digest (webcrypto)',
  HMACREQUEST: 'hmac (webcrypto)',
  CIPHERREQUEST: 'encrypt/decrypt (webcrypto)',
  KEYEXPORTREQUEST: 'exportKey (webcrypto)',
  ZLIB: 'zlib',
  FSREQCALLBACK: 'fs (callbacks)',
  FSREQPROMISE: 'fs.promises',
  GETADDRINFOREQWRAP: 'dns.lookup',
  GETNAMEINFOREQWRAP: 'dns.lookupService',
});

/**
 * A readable name for a job type as the tracer reports it.
 * @param {string} type provider type (PBKDF2REQUEST) or an addon's resource name
 */
function typeName(type) {
  return TYPE_NAMES[String(type).toUpperCase()] || String(type);
}

module.exports = { TYPE_NAMES, typeName };
