'use strict';

// eventloop-blocked names what blocked the loop, from the blocks the capture put on each sample
// (details.blockers, lib/sources/blockers/), on figures the test sets: the blockers costliest
// first with their share of the blocked time, GC named as GC with the heap, what the capture could
// not see said as such; the intervals the rule does not count add nothing; without the capture's
// details the finding is what it was. The window keeps each interval's blocks bounded.

const assert = require('node:assert/strict');
const { createFindingsEngine } = require('../../lib/findings/engine');
const { intervalBlocks, MAX_KEPT } = require('../../lib/findings/blockers');
const { formatReport } = require('../../lib/report/text');

// One 1 s interval; blocked: the loop 300 ms late while its thread ran (the rule's blocked interval).
function sample({ blocked = false, blockers } = {}) {
  const late = blocked ? 0.3 : 0.002;
  const points = [
    { name: 'nodejs.eventloop.delay.max', attributes: {}, value: late },
    { name: 'nodejs.eventloop.delay.p99', attributes: {}, value: late },
  ];
  const details = { dns: { inFlight: 0, hosts: [] }, eventloop: { mainThreadCpuSeconds: 0.9, mainThreadWaitSeconds: 0 } };
  if (blockers !== undefined) details.blockers = blockers;
  return { points, details };
}

function run(samples) {
  const engine = createFindingsEngine({ checkQuiet: true, intervalMs: 1000, startTime: 0 });
  let findings = [];
  samples.forEach((s, i) => {
    findings = engine.evaluate({ ...s, time: (i + 1) * 1000 });
  });
  return findings.find((f) => f.id === 'eventloop-blocked') || null;
}

const frame = (fn, file, line, pkg = null) => ({ function: fn, file, line, package: pkg });
const IMPORT = frame('importCsv', 'src/import.js', 9);
const PARSE = frame('parse', '/srv/app/node_modules/csv-parse/lib/sync.js', 40, 'csv-parse');
const NEXT = frame('nextRecord', '/srv/app/node_modules/csv-parse/lib/index.js', 200, 'csv-parse');
const SPIN = frame('render', 'src/page.js', 12);

function block(seconds, { gcShare = 0, blockers = [], route = null, samples = 100, uncaptured = null, heap = null } = {}) {
  return { startedMs: 0, durationSeconds: seconds, ranSeconds: seconds, capturedSeconds: seconds / 2, samples, gcShare, route, blockers, uncaptured, heap };
}

function details(blocks, more = {}) {
  return { capturing: true, ready: true, unavailable: null, thresholdSeconds: 0.1, blocks, dropped: 0, missed: 0, ...more };
}

// A 300 ms block: 80 % of its samples in csv-parse (its inner function, under the package's
// entry the app called), 10 % in the app's own render(), 10 % GC, serving POST /import.
const CSV = () => block(0.3, {
  gcShare: 0.1,
  route: 'POST /import',
  blockers: [{ frame: NEXT, call: PARSE, appFrame: IMPORT, share: 0.8 }, { frame: SPIN, call: null, appFrame: SPIN, share: 0.1 }],
});

describe('findings/eventloop-blocked: what blocked the loop', () => {
  it('names the blockers costliest first with their share of the blocked time, the route, the frames in the evidence', () => {
    // A third interval where a block of another blocker came in an interval the rule does not count
    // (startup): it adds nothing.
    const startup = sample({ blockers: details([block(0.5, { blockers: [{ frame: SPIN, call: null, appFrame: SPIN, share: 1 }] })]) });
    const f = run([startup, sample({ blocked: true, blockers: details([CSV()]) }), sample({ blocked: true, blockers: details([CSV(), CSV()]) })]);
    assert.ok(f);
    // 0.9 s of blocks: 0.72 s in csv-parse (80 %), 0.09 s each in render() and the GC (10 %).
    assert.match(f.summary, /Of the 3 blocks of 100 ms or more timed in them \(900 ms in all, up to 300 ms\): 80 % in csv-parse's `parse` called from src\/import\.js:9 while serving POST \/import, 10 % in `render` at src\/page\.js:12 while serving POST \/import, 10 % in V8's garbage collector \(up to 30 ms in one block\)\./);
    const b = f.evidence.blockers;
    assert.equal(b.blocks, 3);
    assert.equal(b.blockedSeconds, 0.9);
    assert.deepEqual(b.named.map((x) => [x.share, x.seconds]), [[0.8, 0.72], [0.1, 0.09]]);
    assert.deepEqual(b.named[0].frame, NEXT);
    assert.deepEqual(b.named[0].call, PARSE);
    assert.deepEqual(b.named[0].appFrame, IMPORT);
    assert.equal(b.named[0].route, 'POST /import');
    assert.equal(b.gcShare, 0.1);
    assert.equal(b.uncapturedShare, 0);
    // Advice for the package's entry (80 %), the app's own code (10 %), the GC (10 %).
    assert.equal(f.advice.length, 3, f.advice.join('\n'));
    assert.match(f.advice[0], /^csv-parse's `parse` \(called from src\/import\.js:9\) has 80 % of the blocked time: use its asynchronous or streaming interface/);
    assert.match(f.advice[1], /^`render` at src\/page\.js:12 has 10 % of the blocked time: split its work into chunks that yield to the loop \(setImmediate/);
    assert.match(f.advice[2], /^V8's garbage collector has 10 % of the blocked time: allocate less on the loop/);
    // The text report shows the finding's evidence, frames included.
    const text = formatReport({ time: 0, points: [], findings: [f], details: {} });
    assert.match(text, /csv-parse's `parse` called from src\/import\.js:9/);
    assert.match(text, /"appFrame":\{"function":"importCsv","file":"src\/import\.js","line":9/);
  });

  it('counts the blocks reported in the interval after a blocked one (the watchdog reports a block after the sample a timer due during it took), no others', () => {
    const other = () => block(0.2, { blockers: [{ frame: SPIN, call: null, appFrame: SPIN, share: 1 }] });
    const f = run([
      sample(),
      sample({ blocked: true, blockers: details([]) }),
      sample({ blocked: true, blockers: details([CSV()]) }), // the first block's report
      sample({ blockers: details([CSV()]) }), // the second's
      sample({ blockers: details([]) }),
      sample({ blockers: details([other()]) }), // neither blocked nor after a blocked interval
    ]);
    assert.equal(f.evidence.blockers.blocks, 2);
    assert.deepEqual(f.evidence.blockers.named.map((x) => x.name), ['csv-parse\'s `parse` called from src/import.js:9', '`render` at src/page.js:12']);
    assert.equal(f.evidence.blockers.named[1].seconds, 0.06);
  });

  it('names a synchronous API of Node\'s through the app\'s frame, with its asynchronous form', () => {
    const gzip = () => block(0.4, { blockers: [{ frame: frame('writeSync', '', 0), call: frame('gzipSync', 'node:zlib', 850), appFrame: frame('compressReport', 'src/report.js', 20), share: 0.95 }] });
    let f = run([sample(), sample({ blocked: true, blockers: details([gzip()]) }), sample({ blocked: true, blockers: details([gzip()]) })]);
    assert.match(f.summary, /: 95 % in `zlib\.gzipSync` called from src\/report\.js:20\./);
    assert.match(f.advice[0], /^Replace `zlib\.gzipSync` \(called from src\/report\.js:20\), 95 % of the blocked time, with zlib\.gzip or a stream/);
    // As V8 names them: zlib's *Sync methods are one function, syncBufferWrapper; crypto's live in
    // Node's internals.
    const as = (call) => () => block(0.4, { blockers: [{ frame: frame('writeSync', '', 0), call, appFrame: frame('work', 'src/work.js', 5), share: 0.95 }] });
    const zlib = as(frame('syncBufferWrapper', 'node:zlib', 780));
    f = run([sample(), sample({ blocked: true, blockers: details([zlib()]) }), sample({ blocked: true, blockers: details([zlib()]) })]);
    assert.match(f.summary, /: 95 % in `zlib\.\*Sync \(gzipSync, deflateSync, \.\.\.\)` called from src\/work\.js:5\./);
    assert.match(f.advice[0], /^Replace `zlib\.\*Sync \(gzipSync, deflateSync, \.\.\.\)` \(called from src\/work\.js:5\), 95 % of the blocked time, with its asynchronous form \(zlib\.gzip for zlib\.gzipSync, \.\.\.\) or a stream/);
    const pbkdf2 = as(frame('pbkdf2Sync', 'node:internal/crypto/pbkdf2', 60));
    f = run([sample(), sample({ blocked: true, blockers: details([pbkdf2()]) }), sample({ blocked: true, blockers: details([pbkdf2()]) })]);
    assert.match(f.summary, /: 95 % in `crypto\.pbkdf2Sync` called from src\/work\.js:5\./);
    assert.match(f.advice[0], /^Replace `crypto\.pbkdf2Sync` \(called from src\/work\.js:5\), 95 % of the blocked time, with crypto\.pbkdf2 with a callback/);
  });

  it('names V8\'s garbage collector as GC, with the heap against its limit', () => {
    const gc = () => block(0.25, { gcShare: 0.9, heap: { usedBytes: 1.9e9, limitBytes: 2.1e9 }, blockers: [{ frame: SPIN, call: null, appFrame: SPIN, share: 0.1 }] });
    const f = run([sample(), sample({ blocked: true, blockers: details([gc()]) }), sample({ blocked: true, blockers: details([gc()]) })]);
    assert.match(f.summary, /: 90 % in V8's garbage collector \(up to 225 ms in one block; the heap held 1\.9 GB of its 2\.1 GB limit after it\), 10 % in `render` at src\/page\.js:12\./);
    assert.equal(f.evidence.blockers.gcShare, 0.9);
    assert.deepEqual(f.evidence.blockers.heap, { usedBytes: 1.9e9, limitBytes: 2.1e9 });
    assert.match(f.advice[0], /^`render`/);
    assert.match(f.advice[1], /^V8's garbage collector has 90 % of the blocked time and the heap is 90 % of its limit \(1\.9 GB of 2\.1 GB\): near the limit/);
  });

  it('says what it could not see: blocks with no JavaScript to sample, the capture off, no block timed', () => {
    const native = () => block(0.6, { samples: 0, uncaptured: 'no stack answered during the block (it ended before the first sample)' });
    let f = run([sample(), sample({ blocked: true, blockers: details([native()]) }), sample({ blocked: true, blockers: details([native()]) })]);
    assert.match(f.summary, /: 100 % in blocks no stack sample saw into \(no stack answered during the block \(it ended before the first sample\)\)\./);
    assert.equal(f.evidence.blockers.uncapturedShare, 1);
    assert.deepEqual(f.evidence.blockers.named, []);
    assert.equal(f.advice.length, 1);
    assert.match(f.advice[0], /^100 % of the blocked time was in blocks no stack sample saw into: one long native call that ended the block\. Look for synchronous calls/);

    const off = details([], { capturing: false, unavailable: 'the capture is off (UVSCOPE_BLOCKERS=on turns it on)' });
    f = run([sample(), sample({ blocked: true, blockers: off }), sample({ blocked: true, blockers: off })]);
    assert.match(f.summary, /waited that long\. What blocked it was not captured: the capture is off \(UVSCOPE_BLOCKERS=on turns it on\)\.$/);
    assert.equal(f.evidence.blockers.capturing, false);
    assert.match(f.advice[0], /^Move CPU-heavy work/, 'the general advice');

    const none = details([]);
    f = run([sample(), sample({ blocked: true, blockers: none }), sample({ blocked: true, blockers: none })]);
    assert.match(f.summary, /waited that long\. The watchdog timed no block of 100 ms or more on a CPU in these intervals, so nothing is named: /);
    assert.equal(f.evidence.blockers.blocks, 0);
  });

  it('healthy twins: blocks in intervals the rule does not count make no finding; without the capture\'s details the finding is as before', () => {
    // The same blocks, the loop never late as the rule counts it (one odd interval is not enough).
    assert.equal(run([sample(), sample({ blockers: details([CSV()]) }), sample({ blockers: details([CSV()]) })]), null);
    assert.equal(run([sample(), sample({ blocked: true, blockers: details([CSV()]) }), sample({ blockers: details([CSV()]) })]), null);
    // No details.blockers (an agent without the capture): the summary, evidence and advice of old.
    const f = run([sample(), sample({ blocked: true }), sample({ blocked: true })]);
    assert.equal(f.summary, 'The event loop was blocked for up to 300 ms in 2 of the last 3 intervals: every request, timer and callback waited that long.');
    assert.equal('blockers' in f.evidence, false);
    assert.equal(f.advice.length, 2);
    assert.match(f.advice[0], /^Move CPU-heavy work/);
  });

  it('the window keeps an interval\'s blocks bounded, one shared object for the quiet ones, and reuses what left it', () => {
    const quiet = intervalBlocks(details([]));
    assert.equal(intervalBlocks(details([])), quiet, 'one object for every quiet interval');
    assert.equal(intervalBlocks(undefined), null);
    // Ten blocks of five blockers each, all different: the interval keeps the costliest MAX_KEPT.
    const many = Array.from({ length: 10 }, (_, i) => block(0.1 + i / 100, {
      blockers: Array.from({ length: 5 }, (__, j) => ({ frame: frame(`f${i}_${j}`, 'src/x.js', j), call: null, appFrame: null, share: 0.2 })),
    }));
    const kept = intervalBlocks(details(many));
    assert.equal(kept.blockers.length, MAX_KEPT);
    assert.equal(kept.blockers[0].frame.function.slice(0, 3), 'f9_');
    assert.equal(kept.count, 10);
    // A summary leaving the window hands its object on: the next interval's figures overwrite it.
    const again = intervalBlocks(details([CSV()]), kept);
    assert.equal(again, kept);
    assert.equal(again.count, 1);
    assert.deepEqual(again.blockers.map((x) => x.frame.function), ['nextRecord', 'render']);
    assert.equal(intervalBlocks(details([]), kept), quiet);
  });
});

describe('findings/cpu-starved: the loop\'s JavaScript as a CPU taker, with what ran in its blocks', () => {
  // cpu-starved's Node 20 case (test/findings/cpu-starved.test.js): the main thread waits for a
  // CPU half the time while the process uses its one CPU; here its blocks were captured too.
  function starved(blockers) {
    const points = [
      { name: 'nodejs.eventloop.delay.max', attributes: {}, value: 0.02 },
      { name: 'nodejs.eventloop.delay.p99', attributes: {}, value: 0.01 },
      { name: 'nodejs.eventloop.utilization', attributes: {}, value: 0.4 },
      { name: 'process.cpu.budget', attributes: {}, value: 1 },
    ];
    const busy = { available: false, reason: 'libuv 1.46.0 (Node 20) does not name its pool threads' };
    const eventloop = { mainThreadCpuSeconds: 0.08, mainThreadWaitSeconds: 0.5, blockedOnCpuMaxSeconds: 0, processCpuSeconds: 0.98 };
    const probes = { work: { maxWaitSeconds: 0.01, inFlightSeconds: 0 }, dns: { maxWaitSeconds: 0.01, inFlightSeconds: 0 } };
    const d = { dns: { inFlight: 0, hosts: [] }, eventloop, threadpool: { size: 4, dnsSlots: 2, pending: {}, probes, busy, tracer: { mode: 'auto', armed: true, armedSince: 1, jobs: [] } } };
    if (blockers !== undefined) d.blockers = blockers;
    return { points, details: d };
  }
  const find = (samples) => {
    const engine = createFindingsEngine({ checkQuiet: true, intervalMs: 1000, startTime: 0 });
    let out = [];
    samples.forEach((s, i) => {
      out = engine.evaluate({ ...s, time: (i + 1) * 1000 });
    });
    return out.find((f) => f.id === 'cpu-starved');
  };

  it('names the loop\'s blocks where the capture named them, and says nothing more without its details', () => {
    const named = find(Array.from({ length: 6 }, () => starved(details([CSV()]))));
    assert.match(named.summary, /The CPU goes to the event loop's own JavaScript, 0\.08 of a CPU \(utilization 40 %, waiting for a CPU included\); of its blocks of 100 ms or more, 80 % of the time was in csv-parse's `parse` called from src\/import\.js:9, 10 % in `render` at src\/page\.js:12, 10 % in V8's garbage collector; the other 0\.9 CPU/);
    const bare = find(Array.from({ length: 6 }, () => starved()));
    assert.equal(bare.summary, named.summary.replace(/; of its blocks of 100 ms or more, [^;]*/, ''));
    const quiet = find(Array.from({ length: 6 }, () => starved(details([]))));
    assert.equal(quiet.summary, bare.summary);
  });
});

describe('findings/eventloop-blocked: a real blocker named (a child process with --require register.js)', function () {
  this.timeout(60000);
  before(function () {
    if (process.platform !== 'linux') this.skip();
  });

  it('400 ms spins in GET /orders/:id, in four intervals: the finding names spinFor (or the handler it was inlined into), its line and the route', async function () {
    // Two of the four intervals must be blocked on a CPU (at load 8 on 2 cores one may not be).
    const path = require('path');
    const { runNode, lastJson, REGISTER, FIXTURES } = require('../helpers/child');
    const r = await runNode(['--require', REGISTER, path.join(FIXTURES, 'blockers-app.js')], {
      // The app takes its own samples (the agent's first would come after 10 s, past its end); the
      // findings' window (60 s) holds 6 of them.
      env: { UVSCOPE_INTERVAL_MS: '10000', UVSCOPE_EXPORTERS: 'none', UVSCOPE_BLOCKERS: 'on', FIXTURE_SCENARIO: 'twice' },
      timeoutMs: 30000,
    });
    assert.equal(r.code, 0, r.stderr);
    const { findings, blocks } = lastJson(r.stdout);
    const f = findings.find((x) => x.id === 'eventloop-blocked');
    assert.ok(f, JSON.stringify({ findings, blocks }));
    const b = f.evidence.blockers;
    assert.ok(b.blocks >= 2, JSON.stringify(b));
    const top = b.named[0];
    assert.equal(top.appFrame.file, 'test/fixtures/blockers-app.js', JSON.stringify(b));
    assert.ok(['spinFor', '(anonymous)'].includes(top.appFrame.function), JSON.stringify(b));
    assert.ok(top.share > 0.5, JSON.stringify(b));
    assert.equal(top.route, 'GET /orders/:id');
    assert.ok(f.summary.includes(`in ${top.name} while serving GET /orders/:id`), f.summary);
    // the spin's own line, as the app knows it
    const { facts } = lastJson(r.stdout);
    assert.equal(top.appFrame.line, facts.spinLine, JSON.stringify(b));
    assert.ok(f.summary.includes(`test/fixtures/blockers-app.js:${facts.spinLine}`), f.summary);
    assert.match(f.advice[0], /split its work into chunks that yield to the loop/);
  });

  it('the same app by default (UVSCOPE_BLOCKERS=auto): the capture starts at the first spin; the finding says that one was not seen into and names spinFor from the later ones', async function () {
    const path = require('path');
    const { runNode, lastJson, REGISTER, FIXTURES } = require('../helpers/child');
    const r = await runNode(['--require', REGISTER, path.join(FIXTURES, 'blockers-app.js')], {
      env: { UVSCOPE_INTERVAL_MS: '10000', UVSCOPE_EXPORTERS: 'none', FIXTURE_SCENARIO: 'twice' },
      timeoutMs: 30000,
    });
    assert.equal(r.code, 0, r.stderr);
    const { findings, blocks, facts } = lastJson(r.stdout);
    const f = findings.find((x) => x.id === 'eventloop-blocked');
    assert.ok(f, JSON.stringify({ findings, blocks }));
    const b = f.evidence.blockers;
    const top = b.named[0];
    assert.ok(['spinFor', '(anonymous)'].includes(top.appFrame.function), JSON.stringify(b));
    assert.equal(top.appFrame.line, facts.spinLine, JSON.stringify(b));
    assert.equal(top.route, 'GET /orders/:id');
    // one of the four spins timed, not seen into: about a quarter of the blocked time
    assert.ok(b.uncapturedShare > 0.1 && b.uncapturedShare < 0.5, JSON.stringify(b));
    assert.match(f.summary, /no stack sample saw into \(the capture starts at the first block/, f.summary);
    assert.ok(f.summary.includes(`test/fixtures/blockers-app.js:${facts.spinLine}`), f.summary);
  });
});
