'use strict';

// Differential check of the findings engine: the same sample sequences through the engine of a
// base commit and through the working tree's, every evaluate's output compared (findings,
// summaries, evidence, advice, impact, order). The sequences: the samples the findings tests
// feed the engine (fixtures/recorded-samples.json) and an agent's in bench/fixtures/steady-app.js
// at 1 s and 100 ms (bench/fixtures/steady-app-samples.json), as recorded and recombined at random with
// numbers perturbed, hostnames renamed, connections and DNS tails added, at 100 ms, 1 s and 5 s.
//
//   node test/findings/differential.js [--base <commit>] [--runs N] [--seed S]
//
// The base's lib/ is taken with `git archive` into a temporary directory. Exits 1 on the first
// difference, printing the sequence's seed and index and both outputs.

const fs = require('fs');
const os = require('os');
const path = require('path');
const util = require('util');
const { execFileSync } = require('child_process');

const ROOT = path.join(__dirname, '..', '..');

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
}

// mulberry32: a small seeded generator, so a failing sequence can be replayed.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NAMES = ['a.test', 'b.test', 'c.test', 'localhost', 'api.numa.test'];

// A copy of a value with some numbers changed (scaled, zeroed, made small or large); integers
// stay integers. `time` is left to the caller.
function perturb(v, rnd, p, key) {
  if (typeof v === 'number') {
    if (key === 'time' || rnd() >= p) return v;
    const r = rnd();
    let out;
    if (r < 0.15) out = 0;
    else if (r < 0.3) out = v * 10;
    else if (r < 0.45) out = rnd() * 0.2;
    else out = v * (rnd() * 3);
    return Number.isInteger(v) ? Math.round(out) : out;
  }
  if (Array.isArray(v)) return v.map((x) => perturb(x, rnd, p, key));
  if (v && typeof v === 'object') {
    const out = {};
    for (const k of Object.keys(v)) out[k] = perturb(v[k], rnd, p, k);
    // a hostname's figures: sometimes another name, so names merge and part in the window
    if (typeof out.name === 'string' && 'lookups' in out && rnd() < 0.3) out.name = NAMES[Math.floor(rnd() * NAMES.length)];
    return out;
  }
  return v;
}

function connections(rnd) {
  const hosts = [];
  const n = Math.floor(rnd() * 3);
  let requests = 0;
  let fresh = 0;
  for (let i = 0; i < n; i++) {
    const r = Math.floor(rnd() * 40);
    const f = rnd() < 0.5 ? r : Math.floor(rnd() * (r + 1));
    hosts.push({ host: NAMES[Math.floor(rnd() * NAMES.length)], requests: r, newConnections: f });
    requests += r;
    fresh += f;
  }
  return { connections: fresh, connectSeconds: rnd() < 0.2 ? 0 : rnd() * fresh * 0.02, requests, newConnections: fresh, hosts };
}

function tailed(h, rnd) {
  const p50 = rnd() < 0.1 ? null : rnd() * 0.02;
  const p99 = p50 === null ? null : p50 * (1 + rnd() * 20) + (rnd() < 0.5 ? 0.05 : 0);
  const meanSeconds = p99 === null ? 0 : p99 * (1 + rnd());
  return {
    ...h,
    recentLookups: Math.floor(rnd() * 300),
    p50,
    p99,
    stddev: rnd() * 0.05,
    mean: p50 === null ? null : p50 * 1.5,
    tail: p99 === null ? null : { lookups: 1 + Math.floor(rnd() * 5), meanSeconds, queueWaitSeconds: rnd() * meanSeconds, resolveSeconds: rnd() * meanSeconds },
  };
}

// One random sequence from the recorded samples.
function sequence(recorded, all, rnd) {
  const base = recorded[Math.floor(rnd() * recorded.length)];
  const intervalMs = [100, 1000, 1000, 5000][Math.floor(rnd() * 4)];
  const length = 1 + Math.floor(rnd() * (intervalMs === 100 ? 700 : 90));
  const p = rnd() < 0.3 ? 0 : rnd() * 0.4;
  const options = { ...base.options, intervalMs, startTime: 0 };
  const samples = [];
  let time = 0;
  // Runs of similar samples (as an app's are) rather than a new sample each interval.
  const from = rnd() < 0.8 ? base.samples : all;
  let current = null;
  for (let i = 0; i < length; i++) {
    if (current === null || rnd() < 0.15) current = from[Math.floor(rnd() * from.length)];
    time += Math.max(1, Math.round(intervalMs * (rnd() < 0.9 ? 1 : rnd() * 2)));
    const s = perturb(current, rnd, p);
    s.time = time;
    s.details = s.details || {};
    if (rnd() < 0.3) s.details.connections = connections(rnd);
    const dns = s.details.dns;
    if (dns && Array.isArray(dns.hosts) && rnd() < 0.4) dns.hosts = dns.hosts.map((h) => (rnd() < 0.6 ? tailed(h, rnd) : h));
    samples.push(s);
  }
  return { options, samples };
}

// As the agent does after each evaluate (lib/agent/agent.js sampleNow): the sample and the findings
// frozen in place, so an engine that kept a part of either to write into later throws here.
const { deepFreeze } = require('../../lib/agent/sampling');

function outputs(createFindingsEngine, { options, samples }) {
  const out = [];
  try {
    const engine = createFindingsEngine({ ...options, checkQuiet: true });
    for (const sample of samples) {
      const s = structuredClone(sample);
      deepFreeze(s.points);
      const found = engine.evaluate(s);
      deepFreeze(s);
      deepFreeze(found);
      out.push(JSON.parse(JSON.stringify(found)));
    }
  } catch (err) {
    out.push({ threw: String(err && err.message) });
  }
  return out;
}

function baseEngine(commit) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-diff-'));
  execFileSync('sh', ['-c', `git -C "${ROOT}" archive ${commit} lib package.json | tar -x -C "${dir}"`]);
  return { dir, createFindingsEngine: require(path.join(dir, 'lib', 'findings', 'engine')).createFindingsEngine };
}

function main() {
  const base = arg('--base', 'HEAD');
  const runs = Number(arg('--runs', 2000));
  const seed0 = Number(arg('--seed', 1));
  // The steady app's samples live with the bench that replays them (bench/ requires nothing
  // under test/, test/support/processes.test.js).
  const recorded = [path.join(__dirname, 'fixtures', 'recorded-samples.json'), path.join(ROOT, 'bench', 'fixtures', 'steady-app-samples.json')]
    .flatMap((f) => JSON.parse(fs.readFileSync(f, 'utf8')));
  const all = recorded.flatMap((r) => r.samples);
  const old = baseEngine(base);
  const now = require(path.join(ROOT, 'lib', 'findings', 'engine')).createFindingsEngine;
  let compared = 0;
  let fired = 0;
  const ids = {};
  const check = (label, seq) => {
    const a = outputs(old.createFindingsEngine, seq);
    const b = outputs(now, seq);
    for (let i = 0; i < a.length; i++) {
      if (!util.isDeepStrictEqual(a[i], b[i])) {
        console.error(`differs: ${label}, evaluate #${i}\nbase:   ${JSON.stringify(a[i])}\nworking: ${JSON.stringify(b[i])}`);
        process.exit(1);
      }
      if (a[i].length) fired++;
      if (Array.isArray(a[i])) for (const f of a[i]) ids[f.id] = (ids[f.id] || 0) + 1;
    }
    compared += a.length;
  };
  recorded.forEach((r, i) => check(`recorded run ${i}`, r));
  for (let k = 0; k < runs; k++) check(`--seed ${seed0 + k} --runs 1`, sequence(recorded, all, prng(seed0 + k)));
  fs.rmSync(old.dir, { recursive: true, force: true });
  console.log(`identical: ${recorded.length} recorded + ${runs} random sequences, ${compared} evaluations (${fired} with findings) against ${base}`);
  console.log(`findings by rule: ${JSON.stringify(ids)}`);
}

main();
