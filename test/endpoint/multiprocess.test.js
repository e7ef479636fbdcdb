'use strict';

const assert = require('node:assert/strict');
const http = require('http');
const path = require('path');
const { spawn } = require('child_process');
const { createHub, PUSH_PATH, PUSH_HEADER } = require('../../lib/endpoint/multiprocess');
const { ROOT, REGISTER, FIXTURES, cleanEnv, freePort, parsePrometheus, runNode } = require('../helpers/child');
const { prometheusSupport, promtoolCheckMetrics } = require('../helpers/prometheus');
const { createDogStatsdReceiver } = require('../helpers/dogstatsd-receiver');

/** A long-running node process whose stdout JSON lines are collected; stopped by the test. */
function startNode(args, env) {
  const child = spawn(process.execPath, args, { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = { child, pid: child.pid, lines: [], stderr: '', exited: false };
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    for (let i; (i = buf.indexOf('\n')) !== -1; buf = buf.slice(i + 1)) {
      const line = buf.slice(0, i);
      if (line.startsWith('{')) proc.lines.push(JSON.parse(line));
    }
  });
  child.stderr.on('data', (d) => (proc.stderr += d));
  child.on('exit', () => (proc.exited = true));
  return proc;
}

function stop(proc, signal = 'SIGTERM') {
  if (!proc || proc.exited) return Promise.resolve();
  return new Promise((resolve) => {
    proc.child.once('exit', resolve);
    process.kill(proc.pid, signal);
  });
}

/** Poll fn until it returns a truthy value, or fail after timeoutMs with what was last seen. */
async function until(fn, what, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last && last.ok !== false) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${last && last.stack ? last.stack : JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function get(port, p) {
  const res = await fetch(`http://127.0.0.1:${port}${p}`);
  return p.endsWith('.json') ? res.json() : res.text();
}

/** localhost lookups counted at the endpoint, by pid: { pid: { count, workerId } }. */
async function lookupsByPid(port) {
  const samples = parsePrometheus(await get(port, '/metrics'));
  const out = {};
  for (const s of samples) {
    if (s.name !== 'dns_lookup_duration_seconds_count' || s.labels.dns_question_name !== 'localhost') continue;
    out[s.labels.pid] = { count: s.value, workerId: s.labels.worker_id };
  }
  return { samples, byPid: out };
}

describe('multiprocess: one endpoint for every process of an app', function () {
  this.timeout(60000);
  const procs = [];
  // Processes a fixture started itself (its children): stopped by their pid, since stopping the
  // fixture with SIGKILL leaves them running.
  const pids = [];
  afterEach(async () => {
    await Promise.all(procs.splice(0).map((p) => stop(p, 'SIGKILL')));
    for (const pid of pids.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });

  it('node:cluster with the agent everywhere: the primary holds the port and serves each worker\'s lookups with pid and worker_id, the sum exact', async () => {
    const port = await freePort();
    const app = startNode([path.join(FIXTURES, 'cluster-app.js')], {
      NODE_OPTIONS: `--require ${REGISTER}`, UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '300', WORKERS: '3',
    });
    procs.push(app);
    const { workers, primary } = await until(() => app.lines.find((l) => l.workers), 'the workers\' lookups');
    assert.equal(primary, app.pid);
    const expected = workers.reduce((n, w) => n + w.lookups, 0);
    assert.equal(expected, 10 + 20 + 30);
    const seen = await until(async () => {
      const r = await lookupsByPid(port);
      const total = Object.values(r.byPid).reduce((n, x) => n + x.count, 0);
      return total === expected && workers.every((w) => r.byPid[w.pid]) ? r : { ok: false, byPid: r.byPid };
    }, `${expected} lookups at the endpoint`);
    for (const w of workers) assert.deepEqual(seen.byPid[w.pid], { count: w.lookups, workerId: String(w.id) }, `worker ${w.id}`);
    assert.equal(seen.byPid[primary], undefined, 'the primary made no lookup');
    // Every process is there, the primary (no worker id) included, each once.
    const sizes = seen.samples.filter((s) => s.name === 'nodejs_uv_threadpool_size');
    assert.deepEqual(sizes.map((s) => Number(s.labels.pid)).sort(), [primary, ...workers.map((w) => w.pid)].sort());
    assert.equal(sizes.find((s) => Number(s.labels.pid) === primary).labels.worker_id, undefined);
    const keys = seen.samples.map((s) => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`);
    assert.equal(new Set(keys).size, keys.length, 'no series twice');
    // The snapshot: the holder's own, the others under processes.
    const snap = await get(port, '/snapshot.json');
    assert.equal(snap.pid, primary);
    assert.deepEqual(snap.processes.map((p) => [p.pid, p.workerId]).sort(), workers.map((w) => [w.pid, String(w.id)]).sort());
    assert.ok(snap.processes.every((p) => Array.isArray(p.points) && Array.isArray(p.findings)));
    // uvscope report lists every process.
    const report = await runNode([path.join(ROOT, 'bin', 'uvscope.js'), 'report', '--url', `http://127.0.0.1:${port}/snapshot.json`]);
    assert.equal(report.code, 0, report.stderr);
    for (const w of workers) assert.match(report.stdout, new RegExp(`^pid ${w.pid} \\(worker ${w.id}\\), `, 'm'));
    if (prometheusSupport().ok) {
      const check = await promtoolCheckMetrics(await get(port, '/metrics'));
      assert.ok(check.ok, check.output);
    }
    assert.doesNotMatch(app.stderr, /UVSCOPE_/, 'no warning: the workers joined');
  });

  it('node:cluster with Datadog only: each process sends with its own pid, each worker with its worker_id; the snapshot endpoint lists every process', async () => {
    const receiver = await createDogStatsdReceiver();
    const port = await freePort();
    try {
      const app = startNode([path.join(FIXTURES, 'cluster-app.js')], {
        NODE_OPTIONS: `--require ${REGISTER}`, UVSCOPE_EXPORTERS: 'datadog', DD_DOGSTATSD_URL: `udp://127.0.0.1:${receiver.port}`, UVSCOPE_SNAPSHOT_PORT: String(port),
        UVSCOPE_INTERVAL_MS: '200', UVSCOPE_DATADOG_FLUSH_INTERVAL_MS: '1000', WORKERS: '2',
      });
      procs.push(app);
      const { workers, primary } = await until(() => app.lines.find((l) => l.workers), 'the workers\' lookups');
      const sizes = () => receiver.find('nodejs.uv.threadpool.size');
      await receiver.waitFor(() => new Set(sizes().map((m) => m.tags.find((t) => t.startsWith('pid:')))).size === 3, 20000);
      const tagsOf = (pid) => sizes().find((m) => m.tags.includes(`pid:${pid}`)).tags.filter((t) => /^(pid|worker_id):/.test(t)).sort();
      assert.deepEqual(tagsOf(primary), [`pid:${primary}`]);
      for (const w of workers) assert.deepEqual(tagsOf(w.pid), [`pid:${w.pid}`, `worker_id:${w.id}`]);
      // Every lookup a worker made, as one distribution value each, under its own pid.
      await receiver.waitFor(() => workers.every((w) => receiver.find('dns.lookup.duration', [`pid:${w.pid}`, 'dns_question_name:localhost']).length === w.lookups), 20000);
      // The endpoint without Prometheus: /snapshot.json of the primary, with each worker's.
      const snap = await until(async () => {
        const s = await get(port, '/snapshot.json');
        return s && s.processes && s.processes.length === workers.length ? s : { ok: false };
      }, 'the workers in /snapshot.json');
      assert.equal(snap.pid, primary);
      assert.deepEqual(snap.processes.map((p) => p.pid).sort(), workers.map((w) => w.pid).sort());
    } finally {
      await receiver.close();
    }
  });

  it('node:cluster with the agent in the workers only: one worker holds the port (exclusive), never shared round-robin', async () => {
    const port = await freePort();
    const app = startNode(['-e', `
      const cluster = require('cluster');
      cluster.setupPrimary({ exec: ${JSON.stringify(path.join(FIXTURES, 'cluster-app.js'))}, execArgv: ['--require', ${JSON.stringify(REGISTER)}] });
      require(${JSON.stringify(path.join(FIXTURES, 'cluster-app.js'))});
    `], { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '300', WORKERS: '2' });
    procs.push(app);
    const { workers } = await until(() => app.lines.find((l) => l.workers), 'the workers\' lookups');
    const seen = await until(async () => {
      const r = await lookupsByPid(port);
      return workers.every((w) => r.byPid[w.pid] && r.byPid[w.pid].count === w.lookups) ? r : { ok: false, byPid: r.byPid };
    }, 'both workers in one scrape');
    assert.deepEqual(Object.keys(seen.byPid).sort(), workers.map((w) => String(w.pid)).sort());
    // Scrape again: the same two processes every time (a shared port would alternate).
    for (let i = 0; i < 4; i++) assert.deepEqual(Object.keys((await lookupsByPid(port)).byPid).sort(), Object.keys(seen.byPid).sort());
    const holder = (await get(port, '/snapshot.json')).pid;
    assert.ok(workers.some((w) => w.pid === holder), 'a worker holds the port');
    // The holding worker dies: the primary releases the port, the other worker takes it over.
    const other = workers.find((w) => w.pid !== holder);
    process.kill(holder, 'SIGKILL');
    await until(async () => (await get(port, '/snapshot.json')).pid === other.pid, 'the other worker to hold the port');
    const alone = await until(async () => {
      const r = await lookupsByPid(port);
      return r.byPid.undefined ? r : { ok: false };
    }, 'the other worker\'s figures');
    assert.deepEqual(alone.byPid, { undefined: { count: other.lookups, workerId: undefined } }, 'alone again: no pid label');
  });

  it('children with NODE_OPTIONS="--require uvscope/register": each child\'s lookups at the parent\'s endpoint; a child that ends has its last figures pushed, then dropped after its TTL', async () => {
    const port = await freePort();
    const app = startNode([path.join(FIXTURES, 'spawn-children.js')], {
      NODE_OPTIONS: `--require ${REGISTER}`, UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '300',
      UVSCOPE_MULTIPROCESS_TTL_MS: '4000', CHILDREN: '2',
    });
    procs.push(app);
    const long = await until(() => {
      const l = app.lines.filter((x) => x.long === true).map((x) => x.child);
      return l.length === 2 ? l : null;
    }, 'the long-lived children');
    pids.push(...long.map((c) => c.pid));
    // The short-lived child ends on its own right after its lookups, before its first interval.
    const short = (await until(() => app.lines.find((x) => x.long === false), 'the short-lived child')).child;
    await until(() => app.lines.find((x) => x.exited === short.pid), 'the short-lived child to exit');
    const expected = [...long, short];
    const seen = await until(async () => {
      const r = await lookupsByPid(port);
      return expected.every((c) => r.byPid[c.pid] && r.byPid[c.pid].count === c.lookups) ? r : { ok: false, byPid: r.byPid };
    }, 'every child\'s lookups, the ended one\'s too');
    assert.equal(Object.values(seen.byPid).reduce((n, x) => n + x.count, 0), 10 + 20 + 3);
    assert.equal(seen.byPid[app.pid], undefined, 'the parent made none');
    // The ended child is dropped after its TTL; the others stay.
    const after = await until(async () => {
      const r = await lookupsByPid(port);
      return r.byPid[short.pid] === undefined ? r : { ok: false };
    }, 'the ended child to be dropped');
    for (const c of long) assert.equal(after.byPid[c.pid].count, c.lookups);
    assert.doesNotMatch(app.stderr, /UVSCOPE_/);
  });

  it('the holder exits first: another process takes the port over and every remaining process\'s figures resume', async () => {
    const port = await freePort();
    const env = { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '300', HOLD_MS: '600000' };
    const holder = startNode(['--require', REGISTER, path.join(FIXTURES, 'lookups-child.js')], { ...env, LOOKUPS: '1' });
    procs.push(holder);
    await until(async () => (await get(port, '/snapshot.json')).pid === holder.pid, 'the first process to hold the port');
    const b = startNode(['--require', REGISTER, path.join(FIXTURES, 'lookups-child.js')], { ...env, LOOKUPS: '7' });
    const c = startNode(['--require', REGISTER, path.join(FIXTURES, 'lookups-child.js')], { ...env, LOOKUPS: '11' });
    procs.push(b, c);
    const all = { [holder.pid]: 1, [b.pid]: 7, [c.pid]: 11 };
    const matches = (byPid, want) => Object.keys(byPid).length === Object.keys(want).length &&
      Object.entries(want).every(([pid, n]) => byPid[pid] && byPid[pid].count === n);
    await until(async () => matches((await lookupsByPid(port)).byPid, all) || { ok: false }, 'all three processes');
    await stop(holder, 'SIGKILL');
    const rest = { [b.pid]: 7, [c.pid]: 11 };
    const seen = await until(async () => {
      const r = await lookupsByPid(port);
      return matches(r.byPid, rest) ? r : { ok: false, byPid: r.byPid };
    }, 'the two remaining processes at the endpoint again');
    assert.equal(seen.byPid[holder.pid], undefined);
    const snap = await get(port, '/snapshot.json');
    assert.ok([b.pid, c.pid].includes(snap.pid), `a remaining process holds the port (${snap.pid})`);
    assert.deepEqual(snap.processes.map((p) => p.pid), [b.pid, c.pid].filter((p) => p !== snap.pid));
    assert.doesNotMatch(b.stderr + c.stderr, /UVSCOPE_/);
  });

  it('a port held by something that is not uvscope: one UVSCOPE_LISTEN_FAILED naming it, pushes backing off, the app runs and ends on its own', async () => {
    const posts = [];
    const foreign = http.createServer((req, res) => {
      posts.push(req.method);
      req.resume();
      res.writeHead(404).end('not here');
    });
    await new Promise((resolve) => foreign.listen(0, '127.0.0.1', resolve));
    try {
      const port = foreign.address().port;
      const r = await runNode(['--require', REGISTER, path.join(FIXTURES, 'lookups-child.js')], {
        env: { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '100', LOOKUPS: '2', HOLD_MS: '2000' },
      });
      assert.equal(r.code, 0, r.stderr);
      const warnings = r.stderr.split('\n').filter((l) => l.includes('UVSCOPE_'));
      assert.equal(warnings.length, 1, r.stderr);
      assert.match(warnings[0], new RegExp(`UVSCOPE_LISTEN_FAILED.*127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\).*not uvscope \\(it answered HTTP 404\\).*UVSCOPE_PROMETHEUS_PORT`));
      // 2 s at a 100 ms interval: 20 pushes without the back-off (100 ms, doubling).
      assert.ok(posts.length >= 1 && posts.length <= 6, `${posts.length} pushes`);
    } finally {
      await new Promise((resolve) => foreign.close(resolve));
    }
  });

  it('UVSCOPE_MULTIPROCESS=false: the holder takes no pushes, and a process set so pushes none', async () => {
    const port = await freePort();
    const env = { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '200', HOLD_MS: '600000' };
    const holder = startNode(['--require', REGISTER, path.join(FIXTURES, 'lookups-child.js')], { ...env, LOOKUPS: '1', UVSCOPE_MULTIPROCESS: 'false' });
    procs.push(holder);
    await until(async () => (await get(port, '/snapshot.json')).pid === holder.pid, 'the holder');
    const member = startNode(['--require', REGISTER, path.join(FIXTURES, 'lookups-child.js')], { ...env, LOOKUPS: '3' });
    const off = startNode(['--require', REGISTER, path.join(FIXTURES, 'lookups-child.js')], { ...env, LOOKUPS: '5', UVSCOPE_MULTIPROCESS: '0' });
    procs.push(member, off);
    await until(() => /UVSCOPE_LISTEN_FAILED/.test(member.stderr) && /UVSCOPE_LISTEN_FAILED/.test(off.stderr), 'both warnings');
    assert.match(member.stderr, /does not serve other processes \(UVSCOPE_MULTIPROCESS=false there\)/);
    assert.match(off.stderr, /the port is in use; set UVSCOPE_PROMETHEUS_PORT/);
    const { byPid } = await lookupsByPid(port);
    assert.deepEqual(byPid, { undefined: { count: 1, workerId: undefined } }, 'the holder alone, without a pid label');
  });

  it('members end on their own: the push connection never keeps a process alive', async () => {
    const port = await freePort();
    const env = { UVSCOPE_PROMETHEUS_PORT: String(port), UVSCOPE_INTERVAL_MS: '200' };
    const holder = startNode(['--require', REGISTER, path.join(FIXTURES, 'lookups-child.js')], { ...env, HOLD_MS: '600000', LOOKUPS: '1' });
    procs.push(holder);
    await until(async () => (await get(port, '/snapshot.json')).pid === holder.pid, 'the holder');
    const member = startNode(['--require', REGISTER, path.join(FIXTURES, 'lookups-child.js')], { ...env, HOLD_MS: '1500', LOOKUPS: '2' });
    procs.push(member);
    await until(async () => (await lookupsByPid(port)).byPid[member.pid] || { ok: false }, 'the member at the endpoint');
    const code = await new Promise((resolve) => (member.exited ? resolve(member.child.exitCode) : member.child.once('exit', resolve)));
    assert.equal(code, 0);
  });
});

describe('multiprocess: the holder takes pushes from this machine only, bounded', function () {
  let server;
  let hub;
  let now;
  beforeEach(async () => {
    now = 1000000;
    hub = createHub({ maxProcesses: 2, now: () => now });
    server = http.createServer((req, res) => {
      if (!hub.handle(req, res)) res.writeHead(404).end();
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterEach(() => new Promise((resolve) => server.close(resolve)));

  function push(body, { headers = {}, method = 'POST' } = {}) {
    return new Promise((resolve, reject) => {
      const data = typeof body === 'string' ? body : JSON.stringify(body);
      const req = http.request({ host: '127.0.0.1', port: server.address().port, path: PUSH_PATH, method, headers: { [PUSH_HEADER]: '1', 'content-type': 'application/json', ...headers } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode, text }));
      });
      req.on('error', reject);
      req.end(method === 'POST' ? data : undefined);
    });
  }
  const message = (pid, extra = {}) => ({
    v: '1', pid, instance: `i${pid}`, intervalMs: 1000, time: 1,
    points: [
      { name: 'nodejs.uv.threadpool.size', attributes: {}, value: 4 },
      { name: 'dns.lookup.duration', attributes: { 'dns.question.name': 'a', 'error.type': '' }, histogram: { bounds: [1], counts: [2, 0], sum: 0.1, count: 2 } },
      { name: 'not.in.the.catalog', attributes: {}, value: 1 },
      { name: 'nodejs.uv.threadpool.pending', attributes: { 'process.pid': '1' }, value: null },
    ],
    findings: [],
    ...extra,
  });

  it('keeps what it knows, answers as uvscope', async () => {
    const r = await push(message(4242, { workerId: '3' }));
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.text).uvscope, '1');
    const [m] = hub.others();
    assert.equal(m.pid, 4242);
    assert.equal(m.workerId, '3');
    assert.deepEqual(m.points.map((p) => p.name), ['nodejs.uv.threadpool.size', 'dns.lookup.duration'], 'unknown names and NaN values left out');
  });

  it('refuses what is not a push from a uvscope process on this machine', async () => {
    assert.equal((await push(message(1), { method: 'GET' })).status, 405);
    assert.equal((await push(message(1), { headers: { [PUSH_HEADER]: '' } })).status, 403, 'no push header (a browser form)');
    assert.equal((await push(message(1), { headers: { host: 'rebound.example:9464' } })).status, 403, 'a DNS-rebound name as Host');
    assert.equal((await push('{"v":"1","pid":"x"}')).status, 400);
    assert.equal((await push('not json')).status, 400);
    assert.equal((await push(message(process.pid))).status, 409, 'its own pid');
    const big = await push(message(5, { findings: [{ id: 'x', pad: 'x'.repeat(5 * 1024 * 1024) }] })).catch((err) => ({ status: err.code }));
    assert.ok([413, 'ECONNRESET', 'EPIPE'].includes(big.status), String(big.status));
    assert.deepEqual(hub.others(), []);
  });

  it('holds at most maxProcesses, refuses a second process with the same pid, drops a process after 3 of its intervals', async () => {
    assert.equal((await push(message(11))).status, 200);
    assert.equal((await push(message(12))).status, 200);
    assert.equal((await push(message(13))).status, 429);
    assert.equal((await push(message(12, { instance: 'another' }))).status, 409);
    now += 2000;
    assert.equal((await push(message(12))).status, 200);
    assert.deepEqual(hub.others().map((m) => m.pid), [11, 12]);
    now += 1500; // 11 last heard 3.5 s ago (3 intervals of 1 s), 12 1.5 s ago
    assert.deepEqual(hub.others().map((m) => m.pid), [12]);
    assert.equal((await push(message(13))).status, 200, 'room again');
  });
});
