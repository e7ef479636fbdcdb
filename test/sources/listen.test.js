'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const net = require('net');
const path = require('path');
const proc = require('../../lib/sources/listen/proc');
const { createListenSampler } = require('../../lib/sources/listen/sampler');
const { markOwnServer } = require('../../lib/core/own-io');
const { netnsSupport, runInNetns } = require('../../examples/incidents/netns');

const FIXTURES = path.join(__dirname, '..', 'fixtures');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-listen-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// A /proc/net/tcp row as the kernel prints it (get_tcp4_sock: 150 bytes with its newline).
function row(sl, port, state, rx, inode) {
  const hex = (n, w) => n.toString(16).toUpperCase().padStart(w, '0');
  return `${String(sl).padStart(4)}: 0100007F:${hex(port, 4)} 00000000:0000 ${hex(state, 2)} 00000000:${hex(rx, 8)} 00:00000000 00000000     0        0 ${inode} 1 0000000000000000 100 0 0 10 0`.padEnd(149) + '\n';
}
const HEADER = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode'.padEnd(149) + '\n';

/** A network namespace of our own, or skip (CI: fail). */
function requireNetns(ctx) {
  const s = netnsSupport();
  if (s.ok) return;
  if (process.env.CI) throw new Error(`a network namespace of the test's own is required in CI (CI=${process.env.CI}): ${s.reason}`);
  console.warn(`[uvscope tests] skipping the accept-queue tests against the kernel: ${s.reason}`);
  ctx.skip();
}

describe('sources/listen: procfs readers', () => {
  it('reads the wanted LISTEN rows\' rx_queue and stops at the first row that is not LISTEN', () => {
    const file = path.join(tmp, 'tcp');
    fs.writeFileSync(file, HEADER + row(0, 80, 0x0a, 3, 1001) + row(1, 81, 0x0a, 7, 1002) + row(2, 82, 0x01, 0, 1003) + row(3, 83, 0x0a, 9, 1004));
    const t = proc.openListenTable(file);
    const want = new Map([[1002, -1], [1004, -1]]);
    assert.equal(t.read(want, 2), 1);
    assert.equal(want.get(1002), 7);
    assert.equal(want.get(1004), -1, 'a LISTEN row after an ESTABLISHED one is not the kernel\'s order: not read');
    t.close();
  });

  it('finds a row split across its reads (thousands of listeners), and reads no further than the row it needs', () => {
    const file = path.join(tmp, 'tcp-big');
    let text = HEADER;
    for (let i = 0; i < 3000; i++) text += row(i, 1000 + i, 0x0a, i % 500, 50000 + i);
    fs.writeFileSync(file, text);
    const t = proc.openListenTable(file);
    const want = new Map([[50000 + 2999, -1], [50000 + 111, -1]]);
    assert.equal(t.read(want, 2), 2);
    assert.deepEqual([want.get(50000 + 111), want.get(50000 + 2999)], [111, 2999 % 500]);
    const one = new Map([[50000 + 10, -1]]);
    assert.equal(t.read(one, 1), 1);
    assert.equal(one.get(50000 + 10), 10);
    assert.ok(t.lastBytes <= 16384, `read ${t.lastBytes} bytes for the 11th row`);
    t.close();
  });

  it('asks the next read for the bytes up to the row it needed, and still finds a row that moved further or nearer', () => {
    const file = path.join(tmp, 'tcp-moves');
    const rows = (n, at) => {
      let text = HEADER;
      for (let i = 0; i < n; i++) text += row(i, 1000 + i, 0x0a, i === at ? 4 : 0, i === at ? 777 : 60000 + i);
      return text + row(n, 9, 0x01, 0, 1);
    };
    fs.writeFileSync(file, rows(200, 4));
    const t = proc.openListenTable(file);
    const read = () => {
      const want = new Map([[777, -1]]);
      return { found: t.read(want, 1), queue: want.get(777), bytes: t.lastBytes };
    };
    // The first read asks for 1024 bytes (the header and the 5th row fit); the next, for those 6 rows only.
    assert.deepEqual(read(), { found: 1, queue: 4, bytes: 1024 });
    assert.deepEqual(read(), { found: 1, queue: 4, bytes: 6 * 150 });
    // Listeners came in front of it: past what the last read needed, it reads on.
    fs.writeFileSync(file, rows(200, 150));
    const further = read();
    assert.deepEqual([further.found, further.queue], [1, 4]);
    assert.ok(further.bytes >= 152 * 150, JSON.stringify(further));
    assert.deepEqual(read(), { found: 1, queue: 4, bytes: 152 * 150 });
    // Listeners gone from in front of it: found in what the last read needed, then asks for less.
    fs.writeFileSync(file, rows(200, 0));
    assert.deepEqual(read(), { found: 1, queue: 4, bytes: 16384 }); // a buffer's worth at most a read
    assert.deepEqual(read(), { found: 1, queue: 4, bytes: 2 * 150 });
    t.close();
  });

  it('reads the TcpExt counters by their header, NaN for one the kernel lacks', () => {
    const file = path.join(tmp, 'netstat');
    fs.writeFileSync(file, 'TcpExt: SyncookiesSent Foo ListenOverflows ListenDrops TCPReqQFullDrop\nTcpExt: 5 1 12345678901 13 2\nIpExt: InNoRoutes\nIpExt: 0\n');
    const n = proc.openNetstat(file);
    const into = new Float64Array(proc.NETSTAT_COUNTERS.length);
    assert.equal(n.read(into), true);
    assert.deepEqual([...into], [12345678901, 13, 2, NaN, 5]);
    n.close();
    assert.equal(proc.openNetstat(path.join(tmp, 'absent')), null);
  });
});

describe('sources/listen: the sampler', () => {
  it('leaves uvscope\'s own server out, and says why there are no figures where the files are not there', async () => {
    const stub = { ...proc, openListenTable: () => null };
    const s = createListenSampler({ proc: stub });
    const own = net.createServer();
    markOwnServer(own);
    const app = net.createServer();
    await new Promise((r) => own.listen(0, '127.0.0.1', r));
    await new Promise((r) => app.listen({ port: 0, host: '127.0.0.1', backlog: 7 }, r));
    try {
      assert.deepEqual(s.sample({ resources: new Map([['TCPServerWrap', 2]]) }), []);
      const d = s.details();
      assert.equal(d.listeners.length, 1);
      assert.equal(d.listeners[0].port, String(app.address().port));
      assert.equal(d.listeners[0].backlog, 7);
      assert.match(d.unavailable, /\/proc\/net\/tcp and \/proc\/net\/tcp6 cannot be read/);
    } finally {
      s.close();
      own.close();
      app.close();
    }
  });

  it('an app that does not listen: no points, no details, no file opened', () => {
    let opened = 0;
    const s = createListenSampler({ proc: { ...proc, openListenTable: (f) => (opened++, proc.openListenTable(f)) }, handles: () => [] });
    assert.deepEqual(s.sample({ resources: new Map() }), []);
    assert.equal(s.details(), null);
    assert.equal(opened, 0);
    s.close();
  });
});

describe('sources/listen: against the kernel, in a network namespace of its own', function () {
  this.timeout(60000);
  let r;
  before(async function () {
    requireNetns(this);
    r = await runInNetns(path.join(FIXTURES, 'listen-app.js'), {});
  });

  it('a queue the test fills while the loop is held reads what the clients connected, within the backlog', () => {
    assert.equal(r.fits.clients.connected, 40);
    assert.equal(r.fits.queue, 40);
    assert.equal(r.fits.overflows, 0);
    assert.deepEqual(r.fits.kernel, { overflows: 0, drops: 0 });
    assert.equal(r.drained, 0, 'accepted once the loop ran');
  });

  it('past the backlog: the queue reads limit + 1 (the clients that connected) and the overflows are the kernel\'s count', () => {
    assert.equal(r.overflow.limit, 32);
    assert.equal(r.overflow.queue, 33);
    assert.equal(r.overflow.clients.connected, r.overflow.queue, 'the others\' SYNs were dropped: they wait for a retransmit');
    assert.ok(r.overflow.overflows >= 100 - 33, `${r.overflow.overflows} overflows`);
    assert.equal(r.overflow.overflows, r.overflow.kernel.overflows);
    assert.ok(r.overflow.earlyGone, 'a closed server is dropped');
  });

  it('a server that listened before the sampler is found; its backlog unseen reads as Node\'s default', () => {
    assert.deepEqual(r.early, { queue: 0, limit: 511 });
  });

  it('where a read of the queues is dear: read at the first sample and at one that comes late (the queue the block left), not at those on time', () => {
    assert.deepEqual(r.dear.trail, [1, 1, 1, 1, 2, 2]);
    assert.equal(r.dear.late, 5);
    assert.equal(r.dear.everySample, false);
  });

  it('IPv6 from tcp6; a Unix socket listed without a queue, and why', () => {
    assert.deepEqual({ queue: r.ipv6.queue, limit: r.ipv6.limit }, { queue: 5, limit: 10 });
    const unix = r.details.listeners.find((l) => l.family === 0);
    assert.equal(unix.queue, null);
    assert.match(unix.why, /sock_diag/);
    assert.equal(r.unixPoints, 0);
    assert.match(r.details.netns.id, /^net:\[\d+\]$/);
    assert.equal(r.afterClose.points, 0, 'no listener, no points (the counters only while the app listens on TCP)');
  });
});
