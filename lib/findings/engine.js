'use strict';

const { searchExpanded } = require('../sources/dns/resolver');
const { dnsSlots } = require('../core/libuv');
const { findPoint } = require('../snapshot/snapshot');
const { summarizePool, dnsSlotsAreTheLimit, threadpoolSaturated, poolHeld } = require('./threadpool');

// Thresholds, in one place. Each rule says in its evidence which one it crossed.
const LIMITS = Object.freeze({
  windowMs: 60000,
  dnsWaitS: 0.02, // probe waited this long for a DNS slot: lookups are queueing
  dnsSaturatedIntervals: 2, // ...in at least this many intervals of the window
  poolWaitS: 0.05, // the work probe waited this long for any thread: the pool is held
  poolSaturatedIntervals: 3, // ...in at least this many consecutive intervals
  // dns-no-cache: one name looked up again and again, for long enough, at a cost: a pool warming up
  // (a burst of lookups, then none) or a cron job's short bursts are not it.
  noCacheMinLookups: 20, // lookups of one name in the window
  noCacheIntervals: 3, // ...spread over at least this many sampling intervals (sustained)
  noCacheSecondsPerSecond: 0.5, // ...that kept callers waiting this long per second of the window
  noCacheQueueWaitPerSecond: 0.05, // ...or waited this long for DNS slots per second
  // dns-tail-latency: p99 far above the median, over enough lookups to say so.
  tailMinLookups: 100,
  tailRatio: 4, // p99 at least this many times p50
  tailExcessS: 0.05, // and at least this far above it
  eventLoopBlockedS: 0.1, // one delay this long
  eventLoopP99S: 0.05, // (both beyond the time the main thread waited for a CPU)
  eventLoopBlockedIntervals: 2, // ...in at least this many intervals: one stall is an odd sample
  keepAliveMinRequests: 20, // requests to one host in the window before judging its reuse
  newConnectionShare: 0.9, // at least this share of them opened a new connection
  heapShareOfContainer: 0.9, // a heap limit this close to the container's leaves no room for the rest
  // Severity from impact.score (seconds lost per second of the window): at least this much is
  // critical, at least warningScore a warning, less is info.
  criticalScore: 0.5,
  warningScore: 0.02,
});

/**
 * Turns snapshots into findings: { id, severity, summary, evidence, advice, impact }. Keeps a
 * window of per-interval summaries (default 60 s) so a finding reflects a pattern, not one odd
 * sample. impact is what the cause cost in the window: { secondsPerSecond?, requests?,
 * loopBlockedSeconds?, score }, where score is seconds lost per second of the window; severity
 * follows from the score and findings come sorted by it, costliest first.
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
      // dns-tail-latency reads the latest summary's tails only (they cover the sampler's last
      // 60 s already): kept in every summary they cost ~18 KB per kept hostname.
      if (window.length > 1) window[window.length - 2].tails = null;
      // While other work holds every pool thread, lookups wait for a thread, not because they are
      // many (threadpool-saturated names the holder): that waiting is not dns-no-cache's cost.
      summary.poolHeld = Boolean(summary.pool) && poolHeld(summary, lim);
      // Likewise while the loop is blocked (eventloop-blocked's own test of an interval): a lookup
      // is timed from the call to its callback, and the callback waits for the loop however fast
      // DNS answered, so that time is the loop's, which eventloop-blocked names.
      if (summary.poolHeld || blockedInInterval(summary, lim) > 0) {
        for (let i = 0; i < summary.hosts.length; i++) summary.hosts[i].noCacheSeconds = summary.hosts[i].noCacheQueueWait = 0;
      }
      mergeHosts(window, lim.windowMs / HOST_BUCKETS);
      const dnsHosts = (sample.details.dns && sample.details.dns.hosts) || [];
      for (let i = 0; i < dnsHosts.length; i++) {
        const h = dnsHosts[i];
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
      const found = [
        threadpoolSaturated(window, lim),
        threadpoolDnsSaturated(window, lim),
        dnsResolverTimeout(window, sample.details.resolver),
        dnsNoCache(window, lim, callers),
        dnsSearchExpansion(window, sample.details.resolver),
        eventLoopBlocked(window, lim),
        httpNoKeepAlive(window, lim),
        heapLimitAboveContainer(summary, lim),
        dnsTailLatency(window, lim),
      ].filter(Boolean);
      return rankByImpact(found, window, lim);
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
    // The share of its runnable time the main thread spent on a CPU rather than waiting for one:
    // on an overloaded host or under a CPU quota the loop is late without the app blocking it.
    loopCpuShare: cpuShare(sample.details.eventloop),
    loopBlockedOnCpu: sample.details.eventloop && typeof sample.details.eventloop.blockedOnCpuMaxSeconds === 'number' ? sample.details.eventloop.blockedOnCpuMaxSeconds : null,
    // The first interval holds the app's and the agent's startup (modules loaded synchronously
    // before anything is served): its loop delay is not a blocked service.
    startup: previous === null,
    hosts: compactHosts(sample.details.dns),
    // The hostnames whose recent lookups have a tail (dns-tail-latency reads the latest only).
    tails: tailHosts(sample.details.dns),
    connections: sample.details.connections || null,
    heapLimit: value('v8js.memory.heap.limit'),
    containerLimit: value('nodejs.memory.constrained'),
    pool: summarizePool(sample, previous, seconds),
  };
}

function threadpoolDnsSaturated(window, lim) {
  // Other work held the pool in the window (threadpool-saturated names it): the probe sees a hold
  // only when it completes, so neighbouring intervals can look like a DNS queue. No DNS claim then.
  if (window.some((s) => s.poolHeld)) return null;
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
const SUMMED = new Set(['lookups', 'errors', 'seconds', 'duplicates', 'timeouts', 'queueWaitSeconds', 'resolveSeconds', 'queuedLookups', 'intervals', 'noCacheSeconds', 'noCacheQueueWait']);
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
  for (let i = 0; i < prev.hosts.length; i++) byName.set(prev.hosts[i].name, prev.hosts[i]);
  for (let i = 0; i < summary.hosts.length; i++) {
    const h = summary.hosts[i];
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
  const hosts = (dns && dns.hosts) || [];
  // Index loops over the hosts here: run once a sample, this code stays in V8's interpreter for
  // long, where for...of makes an iterator result per hostname.
  for (let i = 0; i < hosts.length; i++) {
    const h = hosts[i];
    if (!isActive(h)) continue;
    // What the rules read (here and in lib/findings/threadpool.js); add a field here to read it.
    out.push({
      name: h.name, lookups: h.lookups, duplicates: h.duplicates, maxDuplicates: h.duplicates, maxInFlight: h.maxInFlight, timeouts: h.timeouts, maxSeconds: h.maxSeconds,
      // each lookup's split (impact of threadpool-dns-saturated) and dns-no-cache's cost (zeroed
      // where other work held the pool), intervals with lookups (its sustained repetition)
      seconds: h.seconds || 0, queueWaitSeconds: h.queueWaitSeconds || 0, queuedLookups: h.queuedLookups || 0,
      noCacheSeconds: h.seconds || 0, noCacheQueueWait: h.queueWaitSeconds || 0, intervals: h.lookups > 0 ? 1 : 0,
    });
  }
  return out;
}

function isActive(h) {
  return h.lookups > 0 || h.duplicates > 0 || h.timeouts > 0 || h.maxInFlight > 0 || h.maxSeconds > 0;
}

// Hostnames whose recent lookups (the sampler's last 60 s) have a p99 above the median: the
// sample's own (frozen) host details, not copies, since only the latest summary keeps them and
// the latest snapshot holds them anyway.
function tailHosts(dns) {
  return ((dns && dns.hosts) || []).filter((h) => h.recentLookups > 0 && h.p50 !== null && h.p99 > h.p50);
}

// dnsNoCache's per-name sums, reused from sample to sample (grown as needed).
let noCacheScratch = new Float64Array(3 * 128);

function dnsNoCache(window, lim, callersByName) {
  const seconds = windowSeconds(window);
  const heldIntervals = window.filter((s) => s.poolHeld).length;
  // Sustained repetition that costs: many lookups of one name over several intervals, and either
  // much time spent in them or much waiting for DNS slots because of them.
  // While other work held the pool in the window, the lookups' time is that work's doing
  // (threadpool-saturated names it); the probe sees the hold only when it completes, so intervals
  // just before it count too: no caching claim then.
  if (heldIntervals > 0) return null;
  // Totals per name in a scratch array (lookups, seconds, queue wait), then an object only for the
  // names that cross the thresholds: this runs every sample over every kept name, and an object
  // per name per sample was a third of what the agent allocated at 300 kept names
  // (bench/dns-names-memory.js). Index loops: in V8's interpreter for...of makes an iterator
  // result per entry.
  const slotOf = new Map();
  let totals = noCacheScratch;
  for (let w = 0; w < window.length; w++) {
    const hosts = window[w].hosts;
    for (let i = 0; i < hosts.length; i++) {
      const h = hosts[i];
      if (h.name === '_other') continue;
      let k = slotOf.get(h.name);
      if (k === undefined) {
        slotOf.set(h.name, (k = slotOf.size));
        if (3 * k + 3 > totals.length) {
          const grown = new Float64Array(2 * totals.length);
          grown.set(totals);
          noCacheScratch = totals = grown;
        }
        totals[3 * k] = totals[3 * k + 1] = totals[3 * k + 2] = 0;
      }
      totals[3 * k] += h.lookups;
      totals[3 * k + 1] += h.noCacheSeconds || 0;
      totals[3 * k + 2] += h.noCacheQueueWait || 0;
    }
  }
  const crosses = (k) => totals[3 * k] >= lim.noCacheMinLookups
    && (totals[3 * k + 1] / seconds >= lim.noCacheSecondsPerSecond || totals[3 * k + 2] / seconds >= lim.noCacheQueueWaitPerSecond);
  const byName = new Map();
  for (let w = 0; w < window.length; w++) {
    const hosts = window[w].hosts;
    for (let i = 0; i < hosts.length; i++) {
      const h = hosts[i];
      if (h.name === '_other' || !crosses(slotOf.get(h.name))) continue;
      let t = byName.get(h.name);
      if (!t) byName.set(h.name, (t = { name: h.name, lookups: 0, intervals: 0, seconds: 0, queueWaitSeconds: 0, duplicates: 0, maxInFlight: 0 }));
      t.lookups += h.lookups;
      t.intervals += h.intervals || 0;
      t.seconds += h.noCacheSeconds || 0;
      t.queueWaitSeconds += h.noCacheQueueWait || 0;
      t.duplicates += h.duplicates;
      t.maxInFlight = Math.max(t.maxInFlight, h.maxInFlight);
    }
  }
  const hot = [...byName.values()]
    .filter((h) => h.lookups >= lim.noCacheMinLookups && h.intervals >= lim.noCacheIntervals
      && (h.seconds / seconds >= lim.noCacheSecondsPerSecond || h.queueWaitSeconds / seconds >= lim.noCacheQueueWaitPerSecond))
    .sort((a, b) => b.seconds - a.seconds);
  if (hot.length === 0) return null;
  hot.sort((a, b) => b.value - a.value);
  const callers = new Map([...callersByName].map(([name, c]) => [name, c.callers]));
  const worst = hot[0];
  // Lookups that start on a later tick (dgram's first send, say) have no app frame on the stack.
  const who = (callers.get(worst.name) || []).find((c) => c.caller !== '(unknown)');
  const lookups = hot.reduce((a, h) => a + h.lookups, 0);
  const lost = hot.reduce((a, h) => a + h.seconds, 0);
  return {
    id: 'dns-no-cache',
    summary: `${worst.name} is looked up ${(worst.lookups / seconds).toFixed(1)} times a second in ${worst.intervals} of the last ${window.length} intervals${worst.maxInFlight > 1 ? `, up to ${worst.maxInFlight} at once` : ''}${who ? `, mostly by ${who.caller}` : ''}, and callers waited ${ms(worst.seconds / seconds)} per second for it${worst.queueWaitSeconds > 0.001 ? ` (${ms(worst.queueWaitSeconds / seconds)} of that for a DNS slot)` : ''}: nothing caches or coalesces these lookups.`,
    evidence: {
      windowSeconds: round(seconds),
      // ruled out: intervals when other work held every pool thread (their waiting is not counted)
      intervalsPoolHeld: heldIntervals,
      hostnames: hot.slice(0, 10).map((h) => ({
        name: h.name,
        lookups: h.lookups,
        lookupsPerSecond: round(h.lookups / seconds),
        intervals: h.intervals,
        lookupSecondsPerSecond: round3(h.seconds / seconds),
        queueWaitSecondsPerSecond: round3(h.queueWaitSeconds / seconds),
        // lookups started while another lookup of the same name was in flight (one would do)
        concurrentDuplicates: h.duplicates,
        maxInFlight: h.maxInFlight,
        callers: (callers.get(h.name) || []).slice(0, 5),
      })),
    },
    advice: [
      'Cache lookups per hostname for their TTL and let concurrent callers share one lookup (for example cacheable-lookup as the lookup function of your HTTP agents, or undici\'s interceptors.dns).',
      'Give StatsD/metrics clients an IP address or a client-side DNS cache: a hostname there means one lookup per packet.',
      'Reuse connections (keep-alive) so connections, not requests, pay for lookups.',
    ],
    impact: { secondsPerSecond: lost / seconds, requests: lookups, score: lost / seconds },
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
  const late = window.filter((s) => (s.delayMax || 0) >= lim.eventLoopBlockedS || (s.delayP99 || 0) >= lim.eventLoopP99S);
  const hot = late.filter((s) => blockedInInterval(s, lim) > 0);
  if (hot.length < lim.eventLoopBlockedIntervals) return null;
  const max = Math.max(...hot.map((s) => Math.max(s.delayMax || 0, s.loopBlockedOnCpu || 0)));
  return {
    id: 'eventloop-blocked',
    severity: max >= 1 ? 'critical' : 'warning',
    summary: `The event loop was blocked for up to ${ms(max)} in ${hot.length} of the last ${window.length} intervals: every request, timer and callback waited that long.`,
    evidence: {
      intervals: hot.length,
      windowIntervals: window.length,
      maxDelaySeconds: max,
      maxP99Seconds: Math.max(...hot.map((s) => s.delayP99 || 0)),
      // ruled out: as late, but mostly while the main thread waited for a CPU
      intervalsWaitingForCpu: late.length - hot.length,
      minCpuShare: hot.some((s) => typeof s.loopCpuShare === 'number') ? round3(Math.min(...hot.filter((s) => typeof s.loopCpuShare === 'number').map((s) => s.loopCpuShare))) : null,
    },
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
  let connectSeconds = 0;
  for (const s of window) {
    for (let i = 0; i < s.hosts.length; i++) lookups += s.hosts[i].lookups;
    if (!s.connections) continue;
    connections += s.connections.connections;
    connectSeconds += s.connections.connectSeconds || 0;
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
  const fresh = hot.reduce((a, h) => a + h.newConnections, 0);
  // What those connections cost to open (lookup and handshake), at the mean connect time.
  const cost = connections > 0 ? (connectSeconds / connections) * fresh : 0;
  const seconds = windowSeconds(window);
  return {
    id: 'http-no-keepalive',
    summary: `${worst.newConnections} of ${worst.requests} requests to ${worst.host} opened a new connection: keep-alive is off, so each request pays for a DNS lookup and a TCP (and TLS) handshake.`,
    evidence: {
      hosts: hot.slice(0, 10),
      lookupsPerNewConnection: connections > 0 ? round(lookups / connections) : null,
      meanConnectSeconds: connections > 0 ? connectSeconds / connections : null,
    },
    advice: [
      'Use an agent with keepAlive: true (new http.Agent({ keepAlive: true })), do not send Connection: close, and let the server keep connections open (keepAliveTimeout).',
      'For fetch/undici, reuse one dispatcher (the global one or an Agent/Pool) rather than a new one per request.',
    ],
    impact: { secondsPerSecond: cost / seconds, requests: fresh, score: cost / seconds },
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

function dnsTailLatency(window, lim) {
  const last = window[window.length - 1];
  const loopMax = Math.max(0, ...window.map((s) => s.delayMax || 0));
  const hot = (last.tails || [])
    .filter((h) => h.recentLookups >= lim.tailMinLookups && h.p50 !== null && h.p99 >= lim.tailRatio * h.p50 && h.p99 - h.p50 >= lim.tailExcessS)
    .map((h) => {
      const excess = h.tail.meanSeconds - h.p50;
      // Where the slowest lookups spent their extra time: waiting for a DNS slot, waiting for the
      // loop to run their callbacks (a loop delay as long as the excess), or at the resolver.
      const place = h.tail.queueWaitSeconds >= excess / 2 ? 'dns-slots' : loopMax >= excess / 2 ? 'event-loop' : 'resolver';
      return { ...h, excess, place };
    })
    // While other work held the pool (threadpool-saturated), lookups waited for a thread that the
    // DNS-slot replay does not see: that tail is not the resolver's, so no resolver claim (and no
    // hedging advice) is made then; threadpool-saturated names the holder.
    .filter((h) => h.place !== 'resolver' || !window.some((s) => s.poolHeld))
    .sort((a, b) => b.tail.lookups * b.excess - a.tail.lookups * a.excess);
  if (hot.length === 0) return null;
  const seconds = windowSeconds(window);
  const h = hot[0];
  const where = {
    resolver: `the resolver: the slowest lookups waited ${ms(h.tail.queueWaitSeconds)} for a DNS slot and the event loop was never blocked longer than ${ms(loopMax)}, so the time went to the answer itself`,
    'dns-slots': `the DNS slots: the slowest lookups waited ${ms(h.tail.queueWaitSeconds)} of their ${ms(h.tail.meanSeconds)} for one of the threadpool's DNS slots`,
    'event-loop': `the event loop: the slowest lookups waited ${ms(h.tail.queueWaitSeconds)} for a DNS slot, but the loop was blocked for up to ${ms(loopMax)}, so their answers waited for the loop to run the callbacks`,
  }[h.place];
  const advice = {
    resolver: [
      `Answer repeated names close by: a node-local caching resolver (NodeLocal DNSCache, dnsmasq, systemd-resolved) or an in-process cache with TTL (cacheable-lookup, undici's interceptors.dns) takes most lookups, and their tail, off the path.`,
      'Make fewer lookups: keep-alive connections look a name up per connection, not per request.',
      `Since the resolver itself is the tail and its spikes look random, hedging helps: if no answer came within about the median (${ms(h.p50)}), send a second query and take the first answer (as in "The Tail at Scale"). It only cuts random spikes; it does not help a resolver that is slow all the time.`,
    ],
    'dns-slots': [
      'The tail is the wait for a DNS slot, not the resolver: cache and coalesce lookups (cacheable-lookup, undici\'s interceptors.dns) or raise UV_THREADPOOL_SIZE (see threadpool-dns-saturated).',
      'Do not hedge: a second query per slow lookup adds to the very queue that makes it slow.',
    ],
    'event-loop': [
      'The tail is the event loop, not DNS: find what blocks it (see eventloop-blocked) and move that work off the loop.',
      'A faster resolver or hedging would not help: the answers came in time and waited for the loop.',
    ],
  }[h.place];
  const cost = hot.reduce((a, x) => a + x.tail.lookups * x.excess, 0);
  return {
    id: 'dns-tail-latency',
    summary: `Lookups of ${h.name} take ${ms(h.p50)} at the median but ${ms(h.p99)} at p99 (standard deviation ${ms(h.stddev)}, over ${h.recentLookups} lookups); the tail lives in ${where}.`,
    evidence: {
      place: h.place,
      maxEventLoopDelaySeconds: loopMax,
      hostnames: hot.slice(0, 10).map((x) => ({
        name: x.name,
        lookups: x.recentLookups,
        p50: x.p50,
        p99: x.p99,
        stddev: x.stddev,
        mean: x.mean,
        place: x.place,
        // A copy: the sampler updates a name's tail in place at the next sample (lib/sources/dns/sampler.js).
        tail: { ...x.tail },
      })),
    },
    advice,
    impact: { secondsPerSecond: cost / seconds, requests: hot.reduce((a, x) => a + x.tail.lookups, 0), score: cost / seconds },
  };
}

// What a finding cost, for rules that do not say themselves: from their evidence and the window.
const IMPACT = {
  'threadpool-dns-saturated': (f, window, seconds) => {
    let waited = 0;
    let requests = 0;
    for (const s of window) {
      for (let i = 0; i < s.hosts.length; i++) {
        const h = s.hosts[i];
        waited += h.queueWaitSeconds || 0;
        requests += h.queuedLookups || 0;
      }
    }
    return { secondsPerSecond: waited / seconds, requests, score: waited / seconds };
  },
  'dns-resolver-timeout': (f, window, seconds) => {
    const lost = f.evidence.lookups * (f.evidence.resolvConf ? f.evidence.resolvConf.timeout : 5);
    return { secondsPerSecond: lost / seconds, requests: f.evidence.lookups, score: lost / seconds };
  },
  // The extra queries happen inside getaddrinfo, out of sight: what they cost is not measured.
  'dns-search-expansion': (f) => ({ requests: f.evidence.hostnames.reduce((a, h) => a + h.lookups, 0), score: 0 }),
  'eventloop-blocked': (f, window, seconds, lim) => {
    // One block per interval at least as long as its largest delay: a lower bound.
    const blocked = window.reduce((a, s) => a + blockedInInterval(s, lim), 0);
    return { loopBlockedSeconds: blocked, score: blocked / seconds };
  },
  // A risk, not time lost yet: the process is OOM-killed before the heap limit is reached.
  'heap-limit-above-container': (f, window, seconds, lim) => ({ score: f.evidence.heapLimitBytes >= f.evidence.containerLimitBytes ? 1 : lim.criticalScore / 2 }),
};

/**
 * Give each finding its impact (what it cost in the window) and the severity that follows, and
 * sort them costliest first. A rule without a measure of its own keeps its severity, scored at
 * that severity's threshold.
 */
function rankByImpact(found, window, lim) {
  const seconds = windowSeconds(window);
  const bySeverity = { critical: lim.criticalScore, warning: lim.warningScore, info: 0 };
  const out = found.map((f) => {
    let impact = f.impact || (IMPACT[f.id] ? IMPACT[f.id](f, window, seconds, lim) : null);
    if (!impact) impact = { score: bySeverity[f.severity] || 0 };
    const severity = impact.score >= lim.criticalScore ? 'critical' : impact.score >= lim.warningScore ? 'warning' : 'info';
    const { id, ...rest } = f;
    return { id, ...rest, severity, impact: roundImpact(impact) };
  });
  return out.sort((a, b) => b.impact.score - a.impact.score);
}

function roundImpact(impact) {
  const out = {};
  for (const [k, v] of Object.entries(impact)) out[k] = typeof v === 'number' && k !== 'requests' ? Math.round(v * 1e4) / 1e4 : v;
  return out;
}

// The longest block of an interval, less the time the main thread waited for a CPU (an
// overloaded host is not the app's block); 0 below the limits. Where the thread's wait is known
// (Linux), the lateness less all the interval's wait; else scaled by the interval's CPU share.
function blockedInInterval(s, lim) {
  if (s.startup) return 0;
  let max;
  let p99;
  if (typeof s.loopBlockedOnCpu === 'number') {
    max = s.loopBlockedOnCpu;
    p99 = Math.min(s.delayP99 || 0, s.loopBlockedOnCpu);
  } else {
    const share = s.loopCpuShare === null || s.loopCpuShare === undefined ? 1 : s.loopCpuShare;
    max = (s.delayMax || 0) * share;
    p99 = (s.delayP99 || 0) * share;
  }
  return max >= lim.eventLoopBlockedS || p99 >= lim.eventLoopP99S ? max : 0;
}

function cpuShare(eventloop) {
  if (!eventloop || typeof eventloop.mainThreadCpuSeconds !== 'number' || typeof eventloop.mainThreadWaitSeconds !== 'number') return null;
  const runnable = eventloop.mainThreadCpuSeconds + eventloop.mainThreadWaitSeconds;
  return runnable > 0 ? eventloop.mainThreadCpuSeconds / runnable : null;
}

function windowSeconds(window) {
  return Math.max(0.001, window.reduce((a, s) => a + (s.seconds || 0), 0));
}

function round3(x) {
  return Math.round(x * 1000) / 1000;
}

// Sum a per-host figure over the window, largest first.
function aggregate(window, pick) {
  const sums = new Map();
  // Index loops: run every sample over every kept name (see dnsNoCache).
  for (let w = 0; w < window.length; w++) {
    const hosts = window[w].hosts;
    for (let i = 0; i < hosts.length; i++) {
      const v = pick(hosts[i]);
      if (v) sums.set(hosts[i].name, (sums.get(hosts[i].name) || 0) + v); // zeros would be filtered out below
    }
  }
  if (sums.size === 0) return [];
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
