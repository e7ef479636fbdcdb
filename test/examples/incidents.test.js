'use strict';

const assert = require('node:assert/strict');
const { requireNamespace } = require('../helpers/namespace');
const { requireCgroup, spawnWeighted } = require('../helpers/cgroup');

const quiet = { print: () => {} };

describe('the incident lab (examples/incidents)', function () {
  // Each app's agent checks its rules' quiet() against their evaluate() (lib/core/faults.js).
  before(() => require('../../examples/incidents/common').configureLab({ checkQuiet: true }));
  after(() => require('../../examples/incidents/common').configureLab({ checkQuiet: false }));
  describe('with the lab\'s DNS server', function () {
    before(function () {
      requireNamespace(this);
    });

    it('wolt: threadpool-dns-saturated at pool 4 and not at 64, and the DNS queue wait shows the difference', async () => {
      const r = await require('../../examples/incidents/wolt').run({ ...quiet, seconds: 2 });
      assert.ok(r[4].findings.includes('threadpool-dns-saturated'), r[4].findings.join());
      assert.ok(!r[64].findings.includes('threadpool-dns-saturated'), r[64].findings.join());
      assert.ok(r[4].dnsQueueWaitMean > 0.1, `pool 4 waits ${r[4].dnsQueueWaitMean} s`);
      assert.ok(r[64].dnsQueueWaitMean < r[4].dnsQueueWaitMean / 10, `pool 64 waits ${r[64].dnsQueueWaitMean} s`);
      // With no queue, a lookup takes what the DNS server takes (30 ms) and its callback's wait
      // for the app's loop, busy with 32 clients (62 ms in all at a load average of 10): under
      // 100 ms, and half of what pool 4's queue makes it.
      assert.ok(r[64].lookupMean > 0.029 && r[64].lookupMean < Math.min(0.1, r[4].lookupMean / 2), `lookup mean ${r[64].lookupMean} (pool 4: ${r[4].lookupMean})`);
    });

    it('klarna: hot-shots with a hostname piles up thousands of GetAddrInfoReqWrap; dns-no-cache names hot-shots', async () => {
      const r = await require('../../examples/incidents/klarna').run({ ...quiet, seconds: 3 });
      assert.ok(r.backlog > 1000, `backlog ${r.backlog}`);
      assert.ok(r.findings.includes('threadpool-dns-saturated'), r.findings.join());
      assert.ok(r.findings.includes('dns-no-cache'), r.findings.join());
      assert.equal(r.caller, 'hot-shots');
    });

    it('ko: a lost first query makes a 5 s lookup; dns-resolver-timeout cites timeout and attempts', async () => {
      const r = await require('../../examples/incidents/ko').run(quiet);
      assert.equal(r.slowLookups, 1);
      assert.ok(r.lookups >= 5);
      const f = r.snapshot.findings.find((x) => x.id === 'dns-resolver-timeout');
      assert.ok(f, r.findings.join());
      assert.equal(f.evidence.resolvConf.timeout, 5);
      assert.equal(f.evidence.resolvConf.attempts, 2);
    });

    it('numa: a resolver with a periodic slow answer: dns-tail-latency names the host, p50, p99 and stddev, and puts the tail at the resolver', async () => {
      const r = await require('../../examples/incidents/numa').run({ ...quiet, seconds: 5 });
      const f = r.snapshot.findings.find((x) => x.id === 'dns-tail-latency');
      assert.ok(f, r.findings.join());
      assert.equal(f.evidence.place, 'resolver');
      const h = f.evidence.hostnames[0];
      assert.equal(h.name, 'api.numa.test');
      // Ground truth: the server answered every 50th query after 150 ms, the rest after 2 ms.
      assert.ok(r.slowAnswers >= 2, `${r.slowAnswers} slow answers`);
      assert.ok(h.p99 >= 0.15 && h.p99 < 0.5, `p99 ${h.p99}`);
      assert.ok(h.p50 < 0.05, `p50 ${h.p50}`);
      assert.ok(h.stddev > 0.01, `stddev ${h.stddev}`);
      assert.ok(h.tail.queueWaitSeconds < 0.01, 'one lookup at a time: no wait for a DNS slot');
      assert.match(f.advice.join(' '), /hedging/i);
      assert.ok(!r.findings.includes('threadpool-dns-saturated'), r.findings.join());
    });
  });

  it('zooz: CPU-bound handlers and no keep-alive give eventloop-blocked and http-no-keepalive, and no threadpool finding', async () => {
    // The app in a cgroup of ten times the default CPU weight where one can be made (spawnWeighted). Beside other sessions' load (a load average of 10 on 2
    // cores, where nice counts only within a session: autogroups) its loop waited for a CPU 0.17 s
    // of 0.27 s, which eventloop-blocked rightly does not call the app's block, and it served 12-24
    // requests a second; in the cgroup 32-33, both findings in 3 runs of 3.
    const r = await require('../../examples/incidents/zooz').run({ ...quiet, seconds: 2, spawnWith: spawnWeighted });
    assert.ok(r.findings.includes('eventloop-blocked'), r.findings.join());
    assert.ok(r.findings.includes('http-no-keepalive'), r.findings.join());
    assert.ok(!r.findings.includes('threadpool-dns-saturated'), 'a blocked loop is not a DNS queue');
    // What blocked it, named by the capture: the handler's CPU burn, at the line of its loop, and
    // the route (the app's source is the truth).
    const blocked = r.snapshot.findings.find((f) => f.id === 'eventloop-blocked');
    const src = require('fs').readFileSync(require.resolve('../../examples/incidents/apps/service.js'), 'utf8').split('\n');
    const burnLine = src.findIndex((l) => l.includes('while (cpuMs() < end)')) + 1;
    const top = blocked.evidence.blockers.named[0];
    assert.equal(top.appFrame.function, 'burnCpu', blocked.summary);
    assert.equal(top.appFrame.line, burnLine, blocked.summary);
    assert.ok(top.share > 0.5, blocked.summary);
    assert.ok(blocked.summary.includes(`in \`burnCpu\` at examples/incidents/apps/service.js:${burnLine} while serving GET /`), blocked.summary);
    // localhost comes from /etc/hosts in microseconds: the lookups' time is the blocked loop's.
    assert.ok(!r.findings.includes('dns-no-cache'), r.findings.join());
  });

  it('csv: a synchronous parse of an uploaded 40,000-row CSV in POST /import: eventloop-blocked names parseCsv, its line and the route', async () => {
    const r = await require('../../examples/incidents/csv').run({ ...quiet, uploads: 6, spawnWith: spawnWeighted });
    // The app's answers are the truth of what it did: every import parsed its 40,000 rows.
    assert.deepEqual(r.imports.map((x) => x.rows), Array(6).fill(40000));
    const f = r.snapshot.findings.find((x) => x.id === 'eventloop-blocked');
    assert.ok(f, r.findings.join());
    const src = require('fs').readFileSync(require.resolve('../../examples/incidents/apps/import-app.js'), 'utf8').split('\n');
    const first = src.findIndex((l) => l.startsWith('function parseCsv')) + 1;
    const last = src.findIndex((l, i) => i >= first && l === '}') + 1;
    const top = f.evidence.blockers.named[0];
    assert.equal(top.appFrame.function, 'parseCsv', f.summary);
    assert.equal(top.appFrame.file, 'examples/incidents/apps/import-app.js', f.summary);
    assert.ok(top.appFrame.line > first && top.appFrame.line < last, `${top.appFrame.line} not in parseCsv (${first}-${last})`);
    assert.equal(top.route, 'POST /import');
    assert.ok(top.share > 0.5, f.summary);
    assert.ok(f.summary.includes(`in \`parseCsv\` at examples/incidents/apps/import-app.js:${top.appFrame.line} while serving POST /import`), f.summary);
    assert.match(f.advice[0], /`parseCsv` at examples\/incidents\/apps\/import-app\.js:\d+ has \d+ % of the blocked time: split its work into chunks/);
    assert.ok(!r.findings.includes('threadpool-saturated'), r.findings.join());
  });

  it('crypto: pbkdf2 on the pool starves DNS and fs; threadpool-saturated, never a DNS finding; hashing in worker_threads clears it', async () => {
    const r = await require('../../examples/incidents/crypto').run({ ...quiet, seconds: 3 });
    const pool = r.pool.snapshot.findings.find((f) => f.id === 'threadpool-saturated');
    assert.ok(pool, r.pool.findings.join());
    assert.ok(!r.pool.findings.includes('threadpool-dns-saturated'), r.pool.findings.join());
    assert.ok(!r.pool.findings.includes('dns-no-cache'), r.pool.findings.join());
    assert.match(pool.summary, /Not DNS/);
    // The lookups and the profile route wait behind the hashes, and not once they run in workers.
    assert.ok(r.pool.lookupMeanSeconds > 10 * r.worker.lookupMeanSeconds, `lookups ${r.pool.lookupMeanSeconds} vs ${r.worker.lookupMeanSeconds}`);
    assert.ok(r.pool.profileMeanSeconds > 10 * r.worker.profileMeanSeconds, `profile ${r.pool.profileMeanSeconds} vs ${r.worker.profileMeanSeconds}`);
    assert.ok(!r.worker.findings.includes('threadpool-saturated'), r.worker.findings.join());
    assert.ok(!r.worker.findings.includes('threadpool-dns-saturated'), r.worker.findings.join());
    // The tracer (UVSCOPE_TRACER=auto) armed on the wait and named pbkdf2, its call site and route.
    assert.ok(r.pool.tracerArmings >= 1, 'the tracer armed');
    assert.equal(r.worker.tracerArmings, 0, 'and not with the hashing in workers');
    const holder = pool.evidence.holder;
    assert.equal(holder.type, 'PBKDF2REQUEST');
    assert.equal(holder.name, 'pbkdf2');
    // The app hashes in the request body's 'end' callback. On Node 24+ the tracer's route rides on
    // AsyncLocalStorage's frame, which a socket-driven 'end' event does not carry (yet): there a
    // route, when named, must be the right one.
    const routes = holder.routes.map((x) => [x.method, x.route]);
    if (Number(process.versions.node.split('.')[0]) < 24 || routes.length > 0) assert.deepEqual(routes, [['POST', '/login']]);
    const line = require('fs').readFileSync(require('path').join(__dirname, '../../examples/incidents/apps/login-app.js'), 'utf8').split('\n').findIndex((l) => l.includes('crypto.pbkdf2(')) + 1;
    assert.equal(holder.callers[0].caller, `examples/incidents/apps/login-app.js:${line}`);
    // In auto mode the tracer counts the jobs submitted since it armed: up to the 16 clients' hashes.
    assert.ok(holder.peakPending >= 1 && holder.peakPending <= 16, `peak ${holder.peakPending} of the 16 clients' hashes`);
    assert.match(pool.summary, /^The threadpool is held by crypto \(pbkdf2\)/);
  });

  it('throttled: a report service in a 0.5 CPU cgroup: cpu-throttled with the quota and the cgroup\'s own throttling figures', async function () {
    requireCgroup(this);
    const r = await require('../../examples/incidents/throttled').run({ ...quiet, seconds: 5 });
    const f = r.snapshot.findings.find((x) => x.id === 'cpu-throttled');
    assert.ok(f, r.findings.join());
    assert.equal(r.quotaCpus, 0.5);
    assert.equal(f.evidence.quotaCpus, 0.5);
    assert.equal(f.evidence.budgetCpus, 0.5);
    // Ground truth: the cgroup's cpu.stat, read by the lab after the snapshot, counts at least what the window did.
    assert.ok(f.evidence.periods <= r.stat.periods && f.evidence.throttledPeriods <= r.stat.throttledPeriods, `${JSON.stringify(f.evidence)} vs ${JSON.stringify(r.stat)}`);
    assert.ok(r.stat.throttledPeriods >= 0.25 * r.stat.periods, `${r.stat.throttledPeriods} of ${r.stat.periods} periods throttled`);
    assert.ok(f.evidence.processCpuPerSecond <= 0.5 * 1.15, `the process used ${f.evidence.processCpuPerSecond} CPU of its 0.5`);
    assert.match(f.summary, /0\.5 CPU of a \d+-CPU host/);
    // Nothing held the pool long or blocked the loop by itself (10 ms turns; a loop stopped by the
    // throttle waited for a CPU): no other finding claims the time.
    assert.ok(!r.findings.includes('threadpool-dns-saturated'), r.findings.join());
    assert.ok(!r.findings.includes('eventloop-blocked'), r.findings.join());
  });

  it('starve: zlib level 9 in short jobs on a pool of 4 and one CPU; cpu-starved names zlib and what waited, no DNS finding; compressing in worker_threads sized to the CPU clears it', async function () {
    const r = await require('../../examples/incidents/starve').run({ ...quiet, seconds: 4 });
    if (r.skipped) this.skip(); // taskset missing: the incident needs one CPU for sure
    const f = r.pool.snapshot.findings.find((x) => x.id === 'cpu-starved');
    // Node 20 knows the app starves itself only while it gets most of its CPU: on a machine so busy
    // that it got less than 60 %, the incident did not happen as written and the finding rightly stays silent.
    if (!f && Number(process.versions.node.split('.')[0]) < 22 && r.pool.appCpus < 0.6) this.skip();
    assert.ok(f, r.pool.findings.join());
    // never a DNS or held-pool finding: no job holds a thread long, the CPU is what they wait for
    for (const id of ['threadpool-saturated', 'threadpool-dns-saturated', 'dns-no-cache', 'dns-tail-latency']) assert.ok(!r.pool.findings.includes(id), r.pool.findings.join());
    // lookups of localhost (/etc/hosts) as the app timed them: slower on the starved pool than with
    // the compression in a worker; uvscope's mean within 3x of the app's own
    assert.ok(r.pool.appLookupMeanSeconds > 2 * r.worker.appLookupMeanSeconds, `lookups ${r.pool.appLookupMeanSeconds} vs ${r.worker.appLookupMeanSeconds}`);
    const seen = f.evidence.waited.lookups.meanSeconds;
    assert.ok(seen > r.pool.appLookupMeanSeconds / 3 && seen < r.pool.appLookupMeanSeconds * 3, `uvscope ${seen}, the app ${r.pool.appLookupMeanSeconds}`);
    assert.deepEqual(r.worker.findings, []);
    if (Number(process.versions.node.split('.')[0]) >= 22) {
      // pool threads are named: their waits, and the tracer (armed while the pool is full) names zlib
      assert.match(f.summary, /^Pool threads wait for a CPU/);
      assert.equal(f.evidence.holder.name, 'zlib');
      const line = require('fs').readFileSync(require('path').join(__dirname, '../../examples/incidents/apps/compress-app.js'), 'utf8').split('\n').findIndex((l) => l.includes('zlib.deflate(')) + 1;
      assert.equal(f.evidence.holder.callers[0].caller, `examples/incidents/apps/compress-app.js:${line}`);
      assert.ok(f.advice.some((a) => /compression level/.test(a)), f.advice.join('\n'));
    } else {
      // Node 20: the loop's wait while the process uses its CPU; the pool's part cannot be told apart
      assert.match(f.summary, /^The event loop waits for a CPU/);
      assert.match(f.summary, /cannot be told apart/);
    }
  });
});

describe('the incident lab: acceptq, in a network namespace of its own', function () {
  this.timeout(120000);
  before(function () {
    const s = require('../../examples/incidents/netns').netnsSupport();
    if (s.ok) return;
    if (process.env.CI) throw new Error(`a network namespace of the test's own is required in CI (CI=${process.env.CI}): ${s.reason}`);
    console.warn(`[uvscope tests] skipping the acceptq incident: ${s.reason}`);
    this.skip();
  });

  it('acceptq: a 1.5 s block while 1,500 clients connect on the default backlog: listen-queue-overflow with the kernel\'s count, the full queue and the block as its cause', async () => {
    const r = await require('../../examples/incidents/acceptq').run({ ...quiet, clients: 1500, rounds: 2 });
    const f = r.snapshot.findings.find((x) => x.id === 'listen-queue-overflow');
    assert.ok(f, r.findings.join());
    // Ground truth: the namespace's counter, read by the driver before and after, counts only the lab's traffic.
    assert.ok(r.kernel.overflows > 0);
    assert.equal(f.evidence.overflows, r.kernel.overflows);
    // The queue uvscope read right after the block: full, 511 + 1, as the driver filled it.
    assert.deepEqual(f.evidence.port, { address: '127.0.0.1', port: r.port, peakQueue: 512, limit: 511, seenFull: true });
    assert.equal(f.evidence.cause, 'blocked');
    assert.ok(f.evidence.maxBlockedSeconds >= 1.4, `${f.evidence.maxBlockedSeconds}`);
    // The clients' own timings: at most the queue's 512 per round were answered without a retransmit.
    assert.equal(r.clients.answered, 3000);
    assert.ok(r.clients.fast <= 2 * 512, `${r.clients.fast} fast`);
    assert.ok(r.clients.slow >= 3000 - 2 * 512, `${r.clients.slow} slow`);
    // ...and every client past the queue's 512 a round had its SYN dropped once at least
    assert.ok(f.evidence.overflows >= 3000 - 2 * 512, `${f.evidence.overflows} drops`);
    assert.ok(r.findings.includes('eventloop-blocked'), r.findings.join());
    assert.equal(f.impact.requests, r.kernel.overflows);
    // What blocked the loop, named by the capture (the app's source is the truth): its spin's line.
    const src = require('fs').readFileSync(require.resolve('../../examples/incidents/apps/accept-app.js'), 'utf8').split('\n');
    const spinLine = src.findIndex((l) => l.includes('while (Date.now() < end)')) + 1;
    assert.deepEqual({ name: f.evidence.blockedBy.name, caller: f.evidence.blockedBy.caller }, { name: '`spin`', caller: `examples/incidents/apps/accept-app.js:${spinLine}` });
    assert.ok(f.evidence.blockedBy.share > 0.5, JSON.stringify(f.evidence.blockedBy));
    assert.match(f.summary, /blocked up to [\d.]+ s, by `spin`\)/);
  });
});
