'use strict';

const { searchExpanded } = require('./resolver');
const { dnsSlots } = require('./libuv');
const { findPoint } = require('./snapshot');
const { summarizePool, dnsSlotsAreTheLimit, threadpoolSaturated } = require('./threadpool-findings');

// Thresholds, in one place. Each rule says in its evidence which one it crossed.
const LIMITS = Object.freeze({
  windowMs: 60000,
  dnsWaitS: 0.02, // probe waited this long for a DNS slot: lookups are queueing
  dnsSaturatedIntervals: 2, // ...in at least this many intervals of the window
  poolWaitS: 0.05, // the work probe waited this long for any thread: the pool is held
  poolSaturatedIntervals: 3, // ...in at least this many consecutive intervals
  sameNamePerSecond: 10, // one hostname looked up this often: no cache
  concurrentDuplicates: 5, // lookups of one name started while another was in flight, per interval
  eventLoopBlockedS: 0.1, // one delay this long
  eventLoopP99S: 0.05,
  keepAliveMinRequests: 20, // requests to one host in the window before judging its reuse
  newConnectionShare: 0.9, // at least this share of them opened a new connection
  heapShareOfContainer: 0.9, // a heap limit this close to the container's leaves no room for the rest
});

/**
 * Turns snapshots into findings: { id, severity, summary, evidence, advice }. Keeps a window of
 * per-interval summaries (default 60 s) so a finding reflects a pattern, not one odd sample.
 * @param {{ intervalMs: number, limits?: Partial<typeof LIMITS> }} options
 */
function createFindingsEngine({ intervalMs, startTime = Date.now(), limits = {} }) {
  const lim = { ...LIMITS, ...limits };
  const size = Math.max(1, Math.ceil(lim.windowMs / intervalMs));
  const window = [];
  // Callers per hostname, from the latest interval that had them (they are cumulative), kept once
  // rather than in every summary of the window.
  const callers = new Map(); // name -> { callers, time }
  let previous = null;
  let previousTime = startTime;

  return {
    /**
     * Add one sample's figures and return the findings over the window.
     * @param {{ time: number, points: readonly import('./snapshot').Point[], details: import('./snapshot').SnapshotDetails }} sample
     * @returns {import('./snapshot').Finding[]}
     */
    evaluate(sample) {
      const summary = summarize(sample, previous, previousTime);
      // Only what the next summary reads of this one (the probes' cumulative waits): keeping the
      // whole sample would keep every hostname's figures alive for one more interval.
      previous = { time: sample.time, points: sample.points.filter((p) => p.name === 'nodejs.uv.threadpool.queue_wait') };
      previousTime = sample.time;
      window.push(summary);
      if (window.length > size) window.shift();
      mergeHosts(window, lim.windowMs / HOST_BUCKETS);
      const dnsHosts = (sample.details.dns && sample.details.dns.hosts) || [];
      for (const h of dnsHosts) {
        if (!h.callers || !h.callers.length || !isActive(h)) continue;
        const c = callers.get(h.name);
        if (c) {
          c.callers = h.callers;
          c.time = sample.time;
        } else {
          callers.set(h.name, { callers: h.callers, time: sample.time });
        }
      }
      callers.forEach((c, name) => {
        if (c.time < window[0].time) callers.delete(name);
      });
      return [
        threadpoolSaturated(window, lim),
        threadpoolDnsSaturated(window, lim),
        dnsResolverTimeout(window, sample.details.resolver),
        dnsNoCache(window, lim, callers),
        dnsSearchExpansion(window, sample.details.resolver),
        eventLoopBlocked(window, lim),
        httpNoKeepAlive(window, lim),
        heapLimitAboveContainer(summary, lim),
      ].filter(Boolean);
    },
  };
}

function summarize(sample, previous, previousTime) {
  const value = (name, attrs = {}) => {
    const p = findPoint(sample.points, name, attrs);
    return p ? p.value : undefined;
  };
  const waitNow = findPoint(sample.points, 'nodejs.uv.threadpool.queue_wait', { 'nodejs.uv.threadpool.queue': 'dns' });
  const waitBefore = previous && findPoint(previous.points, 'nodejs.uv.threadpool.queue_wait', { 'nodejs.uv.threadpool.queue': 'dns' });
  const waits = waitNow ? { count: waitNow.histogram.count - (waitBefore ? waitBefore.histogram.count : 0), sum: waitNow.histogram.sum - (waitBefore ? waitBefore.histogram.sum : 0) } : { count: 0, sum: 0 };
  const probeStuck = value('uvscope.probe.in_flight', { 'nodejs.uv.threadpool.queue': 'dns' }) || 0;
  const seconds = Math.max(0.001, (sample.time - previousTime) / 1000);
  return {
    time: sample.time,
    seconds,
    size: value('nodejs.uv.threadpool.size'),
    slots: value('nodejs.uv.threadpool.dns_slots'),
    pendingDns: (value('nodejs.uv.threadpool.pending', { 'nodejs.uv.threadpool.kind': 'dns' }) || 0) - probeStuck,
    queuedDns: Math.max(0, (value('nodejs.uv.threadpool.queued', { 'nodejs.uv.threadpool.kind': 'dns' }) || 0) - probeStuck),
    probeStuck,
    dnsWaitMean: waits.count > 0 ? waits.sum / waits.count : null,
    delayMax: value('nodejs.eventloop.delay.max'),
    delayP99: value('nodejs.eventloop.delay.p99'),
    hosts: compactHosts(sample.details.dns),
    connections: sample.details.connections || null,
    heapLimit: value('v8js.memory.heap.limit'),
    containerLimit: value('nodejs.memory.constrained'),
    pool: summarizePool(sample, previous, seconds),
  };
}

function threadpoolDnsSaturated(window, lim) {
  // A blocked event loop delays the probe's callback and keeps finished lookups counted as
  // pending until their callbacks run: only a wait beyond the loop's own delay is queueing.
  const hot = window.filter((s) => {
    const loop = s.delayMax || 0;
    const stuck = s.probeStuck && loop < s.seconds / 2;
    const waited = s.dnsWaitMean !== null && s.dnsWaitMean >= lim.dnsWaitS + loop;
    // Lookups wait for a DNS slot only while the rest of the pool is free; when no thread is,
    // they wait behind other work (threadpool-saturated).
    return s.queuedDns > 0 && (stuck || waited) && dnsSlotsAreTheLimit(s, lim);
  });
  if (hot.length < lim.dnsSaturatedIntervals) return null;
  const last = window[window.length - 1];
  const peakPending = Math.max(...window.map((s) => s.pendingDns));
  const peakQueued = Math.max(...window.map((s) => s.queuedDns));
  const waits = window.map((s) => s.dnsWaitMean).filter((w) => w !== null);
  const maxWait = waits.length ? Math.max(...waits) : null;
  // (size+1)/2 slots must cover the peak of concurrent lookups.
  const suggested = Math.min(1024, Math.max(last.size + 1, 2 * peakPending - 1));
  return {
    id: 'threadpool-dns-saturated',
    severity: maxWait !== null && maxWait >= 1 ? 'critical' : 'warning',
    summary: `DNS lookups queue for the threadpool: up to ${peakPending} lookups pending for ${last.slots} DNS slots (UV_THREADPOOL_SIZE=${last.size}), ${peakQueued} waiting${maxWait !== null ? `, probe waited up to ${ms(maxWait)}` : ''}.`,
    evidence: {
      intervals: hot.length,
      windowIntervals: window.length,
      threadpoolSize: last.size,
      dnsSlots: last.slots,
      peakPendingLookups: peakPending,
      peakQueuedLookups: peakQueued,
      maxQueueWaitSeconds: maxWait,
      topHostnames: topHosts(window, (h) => h.lookups).slice(0, 5),
    },
    advice: [
      2 * peakPending - 1 <= 1024
        ? `Raise UV_THREADPOOL_SIZE to ${suggested}: (size+1)/2 = ${dnsSlots(suggested)} DNS slots would have covered the peak of ${peakPending} concurrent lookups. Set it in the environment or at the very top of the app, before anything uses the pool.`
        : `Even the largest pool, UV_THREADPOOL_SIZE=1024 (512 DNS slots), cannot cover a peak of ${peakPending} concurrent lookups: the lookups themselves have to go (cache them, or use IP addresses).`,
      'Cache and coalesce lookups (one lookup per hostname and TTL, concurrent callers share it).',
      'Reuse connections (keep-alive) so each request does not start with a lookup.',
    ],
  };
}

function dnsResolverTimeout(window, resolver) {
  const hosts = aggregate(window, (h) => h.timeouts);
  const total = hosts.reduce((a, h) => a + h.value, 0);
  if (total === 0) return null;
  const timeout = resolver ? resolver.timeout : 5;
  const attempts = resolver ? resolver.attempts : 2;
  return {
    id: 'dns-resolver-timeout',
    severity: 'warning',
    summary: `${total} lookup(s) took about a multiple of the resolv.conf timeout (${timeout} s): a DNS query got no answer and was sent again.`,
    evidence: {
      lookups: total,
      hostnames: hosts.slice(0, 10).map((h) => ({ name: h.name, lookups: h.value })),
      resolvConf: resolver ? { nameservers: resolver.nameservers, timeout, attempts, options: resolver.options } : null,
    },
    advice: [
      `Find why queries go unanswered (packet loss, an overloaded or unreachable nameserver, conntrack races on parallel A/AAAA queries). With timeout:${timeout} attempts:${attempts}, one lost packet costs ${timeout} s and a dead nameserver up to ${timeout * attempts} s per lookup.`,
      'A lower timeout (options timeout:1 attempts:2 in resolv.conf, dnsConfig in Kubernetes) bounds the cost; options single-request-reopen avoids the A/AAAA conntrack race.',
      'A local caching resolver (NodeLocal DNSCache, dnsmasq, systemd-resolved) and an in-process cache remove most queries.',
    ],
  };
}

// Per-hostname figures in the window are merged into at most HOST_BUCKETS buckets (5 s each over
// 60 s): the latest summary of a bucket carries the bucket's sums (and the largest per-interval
// figures), the earlier ones none. Rules sum and take maxima over the window as before, so they
// see the same figures; memory per hostname no longer grows with the number of intervals
// (UVSCOPE_INTERVAL_MS=50 kept 1200 entries per name). A bucket leaves the window with its latest
// interval, so host figures cover the last 60 to 65 s.
const HOST_BUCKETS = 12;
// Per-interval counts and sums of a hostname's details, added up when intervals merge; max* fields
// take the largest; any other number is a figure of the moment and takes the latest.
const SUMMED = new Set(['lookups', 'errors', 'seconds', 'duplicates', 'timeouts', 'queueWaitSeconds', 'resolveSeconds']);
const NO_HOSTS = Object.freeze([]);

function mergeHosts(window, bucketMs) {
  const summary = window[window.length - 1];
  const prev = window.length > 1 ? window[window.length - 2] : null;
  if (!prev || prev.hostsSince === undefined || summary.time - prev.hostsSince >= bucketMs) {
    summary.hostsSince = summary.time;
    return;
  }
  summary.hostsSince = prev.hostsSince;
  const byName = new Map();
  for (const h of prev.hosts) byName.set(h.name, h);
  for (const h of summary.hosts) {
    const m = byName.get(h.name);
    if (!m) {
      byName.set(h.name, h);
      continue;
    }
    for (const k in h) {
      if (typeof h[k] !== 'number') continue;
      if (SUMMED.has(k)) m[k] = (m[k] || 0) + h[k];
      else if (k.startsWith('max')) m[k] = Math.max(m[k] || 0, h[k]);
      else m[k] = h[k]; // a figure of the moment (inFlight, totalLookups, ...): the latest
    }
  }
  summary.hosts = [...byName.values()];
  prev.hosts = NO_HOSTS;
}

// What the rules read of a hostname's interval, for the hostnames active in it: the window holds
// these, merged (mergeHosts), not the snapshot's full details with callers (which made ~20 KB per
// kept hostname over a 60 s window at a 1 s interval).
function compactHosts(dns) {
  const out = [];
  for (const h of (dns && dns.hosts) || []) {
    if (!isActive(h)) continue;
    // What the rules read (here and in lib/threadpool-findings.js); add a field here to read it.
    out.push({ name: h.name, lookups: h.lookups, duplicates: h.duplicates, maxDuplicates: h.duplicates, maxInFlight: h.maxInFlight, timeouts: h.timeouts, maxSeconds: h.maxSeconds, seconds: h.seconds });
  }
  return out;
}

function isActive(h) {
  return h.lookups > 0 || h.duplicates > 0 || h.timeouts > 0 || h.maxInFlight > 0 || h.maxSeconds > 0;
}

function dnsNoCache(window, lim, callersByName) {
  const seconds = window.reduce((a, s) => a + (s.seconds || 0), 0);
  // One pass and one small object per name (this runs every sample, over every kept name).
  const per = new Map(); // name -> { lookups, duplicates, maxDup, atOnce }
  for (const s of window) {
    for (const h of s.hosts) {
      let a = per.get(h.name);
      if (!a) per.set(h.name, (a = { lookups: 0, duplicates: 0, maxDup: 0, atOnce: 0 }));
      a.lookups += h.lookups;
      a.duplicates += h.duplicates;
      if (h.maxDuplicates > a.maxDup) a.maxDup = h.maxDuplicates;
      if (h.maxInFlight > a.atOnce) a.atOnce = h.maxInFlight;
    }
  }
  const hot = [];
  per.forEach((a, name) => {
    const perSecond = seconds > 0 ? a.lookups / seconds : 0;
    if (a.lookups > 0 && (perSecond >= lim.sameNamePerSecond || a.maxDup >= lim.concurrentDuplicates)) hot.push({ name, value: a.lookups, perSecond });
  });
  if (hot.length === 0) return null;
  hot.sort((a, b) => b.value - a.value);
  const callers = new Map([...callersByName].map(([name, c]) => [name, c.callers]));
  const worst = hot[0];
  // Lookups that start on a later tick (dgram's first send, say) have no app frame on the stack.
  const who = (callers.get(worst.name) || []).find((c) => c.caller !== '(unknown)');
  return {
    id: 'dns-no-cache',
    severity: 'warning',
    summary: `${worst.name} is looked up ${worst.perSecond.toFixed(1)} times a second${per.get(worst.name).atOnce > 1 ? `, up to ${per.get(worst.name).atOnce} at once` : ''}${who ? `, mostly by ${who.caller}` : ''}: nothing caches or coalesces these lookups.`,
    evidence: {
      hostnames: hot.slice(0, 10).map((h) => ({
        name: h.name,
        lookupsPerSecond: round(h.perSecond),
        // lookups started while another lookup of the same name was in flight (one would do)
        concurrentDuplicates: per.get(h.name).duplicates,
        maxInFlight: per.get(h.name).atOnce,
        callers: (callers.get(h.name) || []).slice(0, 5),
      })),
    },
    advice: [
      'Cache lookups per hostname for their TTL and let concurrent callers share one lookup (for example cacheable-lookup as the lookup function of your HTTP agents).',
      'Give StatsD/metrics clients an IP address or a client-side DNS cache: a hostname there means one lookup per packet.',
      'Reuse connections (keep-alive) so connections, not requests, pay for lookups.',
    ],
  };
}

function dnsSearchExpansion(window, resolver) {
  if (!resolver || resolver.search.length === 0) return null;
  const conf = { ...resolver, hosts: new Set(resolver.hostsNames || []) };
  const names = aggregate(window, (h) => h.lookups).filter((h) => h.name !== '_other' && searchExpanded(h.name, conf));
  if (names.length === 0) return null;
  return {
    id: 'dns-search-expansion',
    severity: 'info',
    summary: `${names.length} hostname(s) have fewer than ndots:${resolver.ndots} dots, so every lookup first tries the ${resolver.search.length} search domain(s): up to ${resolver.search.length + 1} queries (x2 for A and AAAA) per lookup.`,
    evidence: { ndots: resolver.ndots, search: resolver.search, hostnames: names.slice(0, 10).map((h) => ({ name: h.name, lookups: h.value })) },
    advice: [
      'Use fully qualified names with a trailing dot (api.example.com.) for external hosts.',
      'Or lower ndots (options ndots:1; in Kubernetes, dnsConfig.options ndots) where the search list is not needed.',
    ],
  };
}

function eventLoopBlocked(window, lim) {
  const hot = window.filter((s) => (s.delayMax || 0) >= lim.eventLoopBlockedS || (s.delayP99 || 0) >= lim.eventLoopP99S);
  if (hot.length === 0) return null;
  const max = Math.max(...hot.map((s) => s.delayMax || 0));
  return {
    id: 'eventloop-blocked',
    severity: max >= 1 ? 'critical' : 'warning',
    summary: `The event loop was blocked for up to ${ms(max)} in ${hot.length} of the last ${window.length} intervals: every request, timer and callback waited that long.`,
    evidence: { intervals: hot.length, windowIntervals: window.length, maxDelaySeconds: max, maxP99Seconds: Math.max(...hot.map((s) => s.delayP99 || 0)) },
    advice: [
      'Move CPU-heavy work (JSON of large bodies, crypto, compression, templating) to worker_threads or another service, or split it into chunks that yield (setImmediate).',
      'Look for synchronous I/O (fs.*Sync, child_process.*Sync) on request paths.',
    ],
  };
}

function httpNoKeepAlive(window, lim) {
  const byHost = new Map();
  let lookups = 0;
  let connections = 0;
  for (const s of window) {
    for (const h of s.hosts) lookups += h.lookups;
    if (!s.connections) continue;
    connections += s.connections.connections;
    for (const h of s.connections.hosts) {
      const t = byHost.get(h.host) || { host: h.host, requests: 0, newConnections: 0 };
      t.requests += h.requests;
      t.newConnections += h.newConnections;
      byHost.set(h.host, t);
    }
  }
  const hot = [...byHost.values()]
    .filter((h) => h.requests >= lim.keepAliveMinRequests && h.newConnections / h.requests >= lim.newConnectionShare)
    .sort((a, b) => b.requests - a.requests);
  if (hot.length === 0) return null;
  const worst = hot[0];
  return {
    id: 'http-no-keepalive',
    severity: 'warning',
    summary: `${worst.newConnections} of ${worst.requests} requests to ${worst.host} opened a new connection: keep-alive is off, so each request pays for a DNS lookup and a TCP (and TLS) handshake.`,
    evidence: {
      hosts: hot.slice(0, 10),
      lookupsPerNewConnection: connections > 0 ? round(lookups / connections) : null,
    },
    advice: [
      'Use an agent with keepAlive: true (new http.Agent({ keepAlive: true })), do not send Connection: close, and let the server keep connections open (keepAliveTimeout).',
      'For fetch/undici, reuse one dispatcher (the global one or an Agent/Pool) rather than a new one per request.',
    ],
  };
}

function heapLimitAboveContainer(last, lim) {
  if (!last.containerLimit || !last.heapLimit) return null;
  if (last.heapLimit < lim.heapShareOfContainer * last.containerLimit) return null;
  const mb = (b) => Math.round(b / 1048576);
  const suggested = Math.floor((last.containerLimit * 0.75) / 1048576);
  return {
    id: 'heap-limit-above-container',
    severity: last.heapLimit >= last.containerLimit ? 'critical' : 'warning',
    summary: `The V8 heap may grow to ${mb(last.heapLimit)} MiB but the container allows ${mb(last.containerLimit)} MiB: the process is OOM-killed before V8 collects garbage hard or reports heap exhaustion.`,
    evidence: { heapLimitBytes: last.heapLimit, containerLimitBytes: last.containerLimit },
    advice: [
      `Set --max-old-space-size=${suggested} (about 75 % of the container limit, leaving room for buffers, native memory and code), e.g. NODE_OPTIONS=--max-old-space-size=${suggested}.`,
      'Or raise the container memory limit to fit the heap limit plus off-heap memory.',
    ],
  };
}

// Sum a per-host figure over the window, largest first.
function aggregate(window, pick) {
  const sums = new Map();
  for (const s of window) {
    for (const h of s.hosts) {
      const v = pick(h);
      if (v) sums.set(h.name, (sums.get(h.name) || 0) + v); // zeros would be filtered out below
    }
  }
  return [...sums].filter(([, v]) => v > 0).map(([name, value]) => ({ name, value })).sort((a, b) => b.value - a.value);
}

function topHosts(window, pick) {
  return aggregate(window, pick).map((h) => ({ name: h.name, lookups: h.value }));
}

function ms(seconds) {
  return seconds >= 1 ? `${seconds.toFixed(2)} s` : `${Math.round(seconds * 1000)} ms`;
}

function round(x) {
  return Math.round(x * 10) / 10;
}

module.exports = { createFindingsEngine, LIMITS };
