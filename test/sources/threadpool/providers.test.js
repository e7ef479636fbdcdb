'use strict';

const assert = require('node:assert/strict');
const { createHook, asyncWrapProviders } = require('async_hooks');
const crypto = require('crypto');
const zlib = require('zlib');
const fs = require('fs');
const { POOL_PROVIDERS, NOT_POOL } = require('../../../lib/sources/threadpool/providers');
const { kindOf } = require('../../../lib/sources/threadpool/jobs');
const { TYPE_NAMES } = require('../../../lib/findings/job-types');

const major = Number(process.versions.node.split('.')[0]);

describe('threadpool/providers: the one list of Node\'s provider types', () => {
  it('every provider type of this Node is in it, as pool work or not; every pool type it lists is one of this Node\'s (ARGON2REQUEST from Node 24)', () => {
    const node = Object.keys(asyncWrapProviders);
    assert.deepEqual(node.filter((t) => !(t in POOL_PROVIDERS) && !NOT_POOL.includes(t)), []);
    const missing = Object.keys(POOL_PROVIDERS).filter((t) => !node.includes(t));
    assert.deepEqual(missing, major >= 24 ? [] : ['ARGON2REQUEST']);
  });

  it('the tracer\'s kinds and the findings\' names are the list\'s', () => {
    for (const [type, { kind, api }] of Object.entries(POOL_PROVIDERS)) {
      assert.equal(kindOf(type), kind, type);
      assert.equal(TYPE_NAMES[type], api, type);
    }
    assert.deepEqual(Object.keys(TYPE_NAMES), Object.keys(POOL_PROVIDERS));
    for (const type of NOT_POOL) assert.equal(kindOf(type), null, type);
  });

  it('the types real jobs have (crypto, webcrypto, zlib, fs) are in it with their kind', async () => {
    /** @type {Map<string, Set<string>>} */
    const seen = new Map();
    let call = '';
    const hook = createHook({
      init(id, type) {
        if (kindOf(type) === null) return;
        if (!seen.has(call)) seen.set(call, new Set());
        /** @type {Set<string>} */ (seen.get(call)).add(type);
      },
    }).enable();
    try {
      const hmac = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
      const ecdsa = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
      const steps = {
        pbkdf2: () => new Promise((r) => crypto.pbkdf2('p', 's', 1, 8, 'sha256', r)),
        hkdf: () => new Promise((r) => crypto.hkdf('sha256', 'k', 's', 'i', 16, r)),
        'hmac sign': () => crypto.subtle.sign('HMAC', hmac, Buffer.from('x')),
        'ecdsa verify': () => crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, ecdsa.publicKey, Buffer.alloc(64), Buffer.from('x')),
        digest: () => crypto.subtle.digest('SHA-256', Buffer.from('x')),
        randomFill: () => new Promise((r) => crypto.randomFill(Buffer.alloc(1), r)),
        gzip: () => new Promise((r) => zlib.gzip('x', r)),
        'fs.promises': () => fs.promises.stat(__filename),
      };
      for (const [name, step] of Object.entries(steps)) {
        call = name;
        await step();
      }
    } finally {
      hook.disable();
    }
    const types = Object.fromEntries([...seen].filter(([c]) => c !== '').map(([c, s]) => [c, [...s].sort()]));
    assert.deepEqual(types, {
      pbkdf2: ['PBKDF2REQUEST'],
      hkdf: ['DERIVEBITSREQUEST'],
      'hmac sign': ['SIGNREQUEST'],
      'ecdsa verify': ['SIGNREQUEST'],
      digest: ['HASHREQUEST'],
      randomFill: ['RANDOMBYTESREQUEST'],
      gzip: ['ZLIB'],
      'fs.promises': ['FSREQPROMISE'],
    });
    for (const list of Object.values(types)) for (const t of list) assert.ok(t in POOL_PROVIDERS, t);
  });
});
