'use strict';

const { dnsSlots: slotsFor } = require('../libuv');
const { readSetting } = require('../options');
const { Histogram } = require('../histogram');
const { QUEUE_WAIT_BUCKETS } = require('../metrics');
const { reportError } = require('../report');

// What Node shows of threadpool work through process.getActiveResourcesInfo(). Async crypto
// (pbkdf2, scrypt, randomFill, keygen...), zlib and user addons' uv_queue_work are not listed
// there; fs.promises.readFile on recent Node reads through FSReqPromise only between chunks.
const DNS_TYPES = Object.freeze(['GetAddrInfoReqWrap', 'GetNameInfoReqWrap']);
const FS_TYPES = Object.freeze(['FSReqCallback', 'FSReqPromise']);

/**
 * Threadpool size, DNS slots, pending and queued work, and queue wait measured by probes.
 *
 * Probes run one at a time per queue, launched right after a sample, so a sample sees the
 * probe only when it is stuck (and says so in uvscope.probe.in_flight). The size is read from
 * UV_THREADPOOL_SIZE at the first sample, after the app's top-level code may have set it, and the
 * first probe (which starts the pool) comes after that read, so the agent never fixes the pool
 * size before the app does.
 *
 * @param {object} [options]
 * @param {NodeJS.ProcessEnv} [options.env] where UV_THREADPOOL_SIZE is read (process.env by default)
 * @param {Function} [options.lookup] dns.lookup as it was before uvscope wrapped it, so probe
 *   lookups are not counted as the app's
 * @param {string} [options.probeHostname] a name getaddrinfo answers locally (from /etc/hosts)
 * @param {Function} [options.randomFill] crypto.randomFill (a job on the general queue)
 */
function createThreadpoolSampler(options = {}) {
  const lookup = options.lookup || require('dns').lookup;
  const probeHostname = options.probeHostname || 'localhost';
  const randomFill = options.randomFill || loadRandomFill();
  let size;
  let dnsSlots;
  let closed = false;

  const probes = {
    dns: createProbe('probe:dns', (done) => lookup(probeHostname, { family: 4 }, done)),
    work: randomFill ? createProbe('probe:work', (done) => randomFill(Buffer.allocUnsafe(1), done)) : null,
  };

  return {
    name: 'threadpool',
    sample(tick) {
      if (size === undefined) {
        size = readSetting('threadpool.size', options.env);
        dnsSlots = slotsFor(size);
      }
      const pendingDns = sum(tick.resources, DNS_TYPES);
      const pendingFs = sum(tick.resources, FS_TYPES);
      // libuv lets at most dnsSlots threads run slow I/O (getaddrinfo/getnameinfo); fs work can
      // use any thread. This is a lower bound for DNS when fs work holds every thread.
      const dnsRunning = Math.min(pendingDns, dnsSlots);
      const fsRunning = Math.min(pendingFs, size - dnsRunning);
      const out = [
        { name: 'nodejs.uv.threadpool.size', attributes: {}, value: size },
        { name: 'nodejs.uv.threadpool.dns_slots', attributes: {}, value: dnsSlots },
        { name: 'nodejs.uv.threadpool.pending', attributes: { 'nodejs.uv.threadpool.kind': 'dns' }, value: pendingDns },
        { name: 'nodejs.uv.threadpool.pending', attributes: { 'nodejs.uv.threadpool.kind': 'fs' }, value: pendingFs },
        { name: 'nodejs.uv.threadpool.queued', attributes: { 'nodejs.uv.threadpool.kind': 'dns' }, value: pendingDns - dnsRunning },
        { name: 'nodejs.uv.threadpool.queued', attributes: { 'nodejs.uv.threadpool.kind': 'fs' }, value: pendingFs - fsRunning },
      ];
      for (const queue of Object.keys(probes)) {
        const probe = probes[queue];
        if (!probe) continue;
        out.push({ name: 'uvscope.probe.in_flight', attributes: { 'nodejs.uv.threadpool.queue': queue }, value: probe.inFlight ? 1 : 0 });
        out.push({ name: 'nodejs.uv.threadpool.queue_wait', attributes: { 'nodejs.uv.threadpool.queue': queue }, histogram: probe.histogram.snapshot() });
      }
      if (!closed) for (const probe of Object.values(probes)) if (probe) probe.launch();
      return out;
    },
    close() {
      closed = true;
    },
  };
}

/**
 * A probe: one job at a time, its submit-to-callback time recorded in a histogram.
 * @param {string} component
 * @param {(done: (err?: Error|null) => void) => void} run
 */
function createProbe(component, run) {
  const histogram = new Histogram(QUEUE_WAIT_BUCKETS);
  let inFlight = false;
  return {
    histogram,
    get inFlight() {
      return inFlight;
    },
    launch() {
      if (inFlight) return;
      inFlight = true;
      const start = process.hrtime.bigint();
      try {
        run((err) => {
          inFlight = false;
          if (err) reportError(component, err);
          else histogram.observe(Number(process.hrtime.bigint() - start) / 1e9);
        });
      } catch (err) {
        inFlight = false;
        reportError(component, err);
      }
    },
  };
}

function sum(counts, types) {
  let n = 0;
  for (const t of types) n += counts.get(t) || 0;
  return n;
}

function loadRandomFill() {
  try {
    return require('crypto').randomFill;
  } catch {
    return null; // Node built without crypto: no work-queue probe.
  }
}

module.exports = { createThreadpoolSampler, DNS_TYPES, FS_TYPES };
