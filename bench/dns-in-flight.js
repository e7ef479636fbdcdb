'use strict';

// What the DNS sampler keeps alive per lookup in flight: the bytes a young-generation GC copies
// while --lookups lookups of localhost (/etc/hosts) are in flight, with the sampler of --lib's
// lib/ minus without it, divided by the lookups (median of --rounds rounds each, after 5 rounds
// of warm-up with the sampler: names, callers, reused records). A lookup in flight at a scavenge
// survives it, with what the agent holds for it; this is that part, which bench/steady-memory.js
// sees only in sum.
//
//   node --expose-gc bench/dns-in-flight.js [--lookups 100] [--rounds 15] [--lib <dir with lib/>]

const dns = require('dns');
const path = require('path');
const v8 = require('v8');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const lookups = Number(arg('--lookups', 100));
const rounds = Number(arg('--rounds', 15));
const root = path.resolve(arg('--lib', path.join(__dirname, '..')));
if (typeof global.gc !== 'function') throw new Error('run with --expose-gc');

const used = () => v8.getHeapStatistics().used_heap_size;

// One round: a full and a minor GC, the lookups started, a minor GC while they are in flight;
// resolves with the growth once all called back.
function round() {
  return new Promise((resolve, reject) => {
    let left = lookups;
    let kept = 0;
    const done = (err) => {
      if (err) reject(err);
      else if (--left === 0) resolve(kept);
    };
    global.gc();
    global.gc({ type: 'minor' });
    const before = used();
    for (let i = 0; i < lookups; i++) dns.lookup('localhost', done);
    global.gc({ type: 'minor' });
    kept = used() - before;
  });
}

const median = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];

async function main() {
  const without = [];
  for (let r = 0; r < rounds; r++) without.push(await round());
  const sampler = require(path.join(root, 'lib/sources/dns/sampler')).createDnsSampler();
  for (let r = 0; r < 5; r++) await round();
  const withSampler = [];
  for (let r = 0; r < rounds; r++) withSampler.push(await round());
  sampler.close();
  console.log(`node ${process.version}, ${root}: ${lookups} lookups in flight keep ${median(without)} B without the DNS sampler, ${median(withSampler)} B with it: ${((median(withSampler) - median(without)) / lookups).toFixed(1)} B a lookup`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
