'use strict';

// Node's async_hooks provider types (src/async_wrap.h, NODE_ASYNC_PROVIDER_TYPES; at run time
// async_hooks.asyncWrapProviders): which are threadpool work, of which kind, and the API a
// developer calls that submits it. The one list: the tracer counts by it (jobs.js), the findings
// and the report name jobs by it (lib/findings/job-types.js). Imports nothing.

/**
 * Threadpool work by provider type: its kind and the API that submits it. Every crypto job runs on
 * the pool when called asynchronously (CryptoJob with kCryptoJobAsync). Checked against Node 20,
 * 22, 24 and 26: sign and verify (crypto.sign/verify with a callback, webcrypto's, HMAC's too) run
 * as SIGNREQUEST; hkdf, diffieHellman and webcrypto's deriveBits as DERIVEBITSREQUEST (there is no
 * HKDFREQUEST nor HMACREQUEST); ARGON2REQUEST is Node 24+; VERIFYREQUEST is defined, no API seen
 * submitting it.
 * @type {Readonly<Record<string, Readonly<{ kind: 'dns' | 'fs' | 'crypto' | 'zlib', api: string }>>>}
 */
const POOL_PROVIDERS = Object.freeze({
  GETADDRINFOREQWRAP: job('dns', 'dns.lookup'),
  GETNAMEINFOREQWRAP: job('dns', 'dns.lookupService'),
  FSREQCALLBACK: job('fs', 'fs (callbacks)'),
  FSREQPROMISE: job('fs', 'fs.promises'),
  FILEHANDLECLOSEREQ: job('fs', 'FileHandle.close'),
  ZLIB: job('zlib', 'zlib'),
  CHECKPRIMEREQUEST: job('crypto', 'checkPrime'),
  PBKDF2REQUEST: job('crypto', 'pbkdf2'),
  KEYPAIRGENREQUEST: job('crypto', 'generateKeyPair'),
  KEYGENREQUEST: job('crypto', 'generateKey'),
  KEYEXPORTREQUEST: job('crypto', 'exportKey (webcrypto)'),
  ARGON2REQUEST: job('crypto', 'argon2'),
  CIPHERREQUEST: job('crypto', 'encrypt/decrypt (webcrypto)'),
  DERIVEBITSREQUEST: job('crypto', 'hkdf/diffieHellman/deriveBits'),
  HASHREQUEST: job('crypto', 'digest (webcrypto)'),
  RANDOMBYTESREQUEST: job('crypto', 'randomBytes/randomFill'),
  RANDOMPRIMEREQUEST: job('crypto', 'generatePrime'),
  SCRYPTREQUEST: job('crypto', 'scrypt'),
  SIGNREQUEST: job('crypto', 'sign/verify'),
  VERIFYREQUEST: job('crypto', 'verify'),
});

/**
 * Node's own provider types that are not threadpool work (handles, stream writes, timers,
 * promises...), and the types of its JavaScript-side resources. A type in neither list is an
 * addon's own name for its async work (napi_create_async_work's async_resource_name, or an
 * AsyncResource's type).
 */
const NOT_POOL = Object.freeze(['NONE', 'DIRHANDLE', 'DNSCHANNEL', 'ELDHISTOGRAM', 'FILEHANDLE', 'BLOBREADER',
  'FSEVENTWRAP', 'HEAPSNAPSHOT', 'HTTP2SESSION', 'HTTP2STREAM', 'HTTP2PING', 'HTTP2SETTINGS',
  'HTTPINCOMINGMESSAGE', 'HTTPCLIENTREQUEST', 'LOCKS', 'DTLS_ENDPOINT', 'DTLS_SESSION', 'JSSTREAM',
  'JSUDPWRAP', 'MESSAGEPORT', 'PIPECONNECTWRAP', 'PIPESERVERWRAP', 'PIPEWRAP', 'PROCESSWRAP', 'PROMISE',
  'QUERYWRAP', 'QUIC_ENDPOINT', 'QUIC_LOGSTREAM', 'QUIC_PACKET', 'QUIC_SESSION', 'QUIC_STREAM', 'QUIC_UDP',
  'SHUTDOWNWRAP', 'SIGNALWRAP', 'STATWATCHER', 'STREAMPIPE', 'TCPCONNECTWRAP', 'TCPSERVERWRAP', 'TCPWRAP',
  'TTYWRAP', 'UDPSENDWRAP', 'UDPWRAP', 'SIGINTWATCHDOG', 'WORKER', 'WORKERCPUPROFILE', 'WORKERCPUUSAGE',
  'WORKERHEAPPROFILE', 'WORKERHEAPSNAPSHOT', 'WORKERHEAPSTATISTICS', 'WRITEWRAP', 'TLSWRAP',
  // JavaScript-side resources
  'Timeout', 'Immediate', 'TickObject', 'Microtask', 'HTTPPARSER',
]);

/**
 * @param {'dns' | 'fs' | 'crypto' | 'zlib'} kind
 * @param {string} api
 */
function job(kind, api) {
  return Object.freeze({ kind, api });
}

module.exports = { POOL_PROVIDERS, NOT_POOL };
