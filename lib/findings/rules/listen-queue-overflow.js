'use strict';

const { defineRule, counterMoved } = require('../rule');

const ID = 'listen-queue-overflow';

/**
 * listen-queue-overflow: the kernel dropped connection attempts to the app's listening socket
 * because its accept queue was full (the namespace's ListenOverflows rose): each client waits for
 * a retransmit, 1 s or more, and nothing in the app sees it. Its interval() keeps, per sample, the
 * counter, the fullest listener and what the loop did (blocked, waiting for a CPU); found/ says
 * which cause the intervals with drops support.
 */
module.exports = defineRule({
  id: ID,
  limits: {
    // Every drop costs a client a retransmit (1 s at least): one is already a cost, not noise.
    listenOverflows: 1,
    // An interval with drops in which the main thread ran less than this share of its runnable
    // time (it waited for a CPU: a quota, an overloaded host) puts them on the CPU, not a burst.
    listenCpuShare: 0.5,
  },
  docs: {
    means: 'the kernel dropped connection attempts to a port because its accept queue was full: each client waited for a retransmit (1 s, then 3 s, 7 s), and the app never saw them',
    fires: (l) => `the network namespace's \`ListenOverflows\` (\`/proc/net/netstat\`, read at each sample while the app listens on TCP) rose by ${l.listenOverflows}+ over the window; the cause each interval with drops supports: the loop blocked in it or the interval before (as \`eventloop-blocked\` judges an interval), or the block's echo (drops up to 7 s after drops while blocked, no more than those: the clients it dropped retrying), else the main thread waiting for a CPU (it ran less than ${Math.round(l.listenCpuShare * 100)} % of its runnable time), else bursts larger than the backlog`,
    impact: '`requests`: the connection attempts dropped (a client retried more than once counts each time); `score`: 1 s for each (the first retransmit comes after 1 s) per second of the window, a lower bound',
    advice: 'by cause: unblock the loop (and what blocked it, where known), or the CPU it waits for; a backlog that holds the bursts (`server.listen({ backlog })` with `net.core.somaxconn` at least as large), more processes or instances, connection reuse on the clients\' side',
    example: 'the lab\'s `acceptq` incident (an HTTP service on the default backlog whose loop is blocked for 1.5 s while 1,500 clients connect, twice): "The kernel dropped 4,929 connection attempts to 127.0.0.1:39883 in the last 7 s because its accept queue was full (512 waiting against its limit of 511): each client waited 1 s or more for a retransmit, and the app never saw them. All came while the event loop was blocked or in the 7 s after, as the clients it dropped retried (blocked up to 1.51 s): nothing called accept()." (the namespace\'s counter rose by the same 4,929; all 3,000 clients were answered after 1 s or more)',
  },
  interval(sample, kept, summary) {
    const d = sample.details && sample.details.listen;
    if (!d || !d.counters || typeof d.counters.ListenOverflows !== 'number') return null;
    const o = kept || {};
    o.overflows = d.counters.ListenOverflows;
    o.synDrops = typeof d.counters.TCPReqQFullDrop === 'number' ? d.counters.TCPReqQFullDrop : 0;
    // the fullest TCP listener at this sample (its queue against its limit)
    o.address = null;
    o.port = null;
    o.queue = 0;
    o.limit = null;
    o.listeners = 0;
    for (let i = 0; i < d.listeners.length; i++) {
      const l = d.listeners[i];
      if (l.queue === null) continue;
      o.listeners++;
      if (o.address === null || (l.limit ? l.queue / l.limit : 0) > (o.limit ? o.queue / o.limit : 0)) {
        o.address = l.address;
        o.port = l.port;
        o.queue = l.queue;
        o.limit = l.limit;
      }
    }
    // What the loop did in the interval: the interval's signal (lib/findings/signals.js), the one
    // eventloop-blocked reads. Its length as that rule states it: the longest delay, or the block
    // on a CPU where longer.
    o.blockedSeconds = summary.loopWasBlocked ? Math.max(summary.delayMax || 0, summary.loopBlockedOnCpu || 0) : 0;
    o.delayMax = typeof summary.delayMax === 'number' ? summary.delayMax : null;
    o.cpuShare = typeof summary.loopCpuShare === 'number' ? summary.loopCpuShare : null;
    o.seconds = summary.seconds;
    o.netns = d.netns ? d.netns.id : null;
    o.moved = true; // until enter() compares it with the reading before
    return o;
  },
  // Whether the counter rose since the reading before (quiet() reads it).
  ...counterMoved(ID, 'overflows'),
  // Nothing to fire on: the counter did not rise since its reading before (the engine's first
  // reading counts as quiet): a window of such readings holds one value, so no rise.
  quiet: (s, lim) => lim.listenOverflows > 0 && !(s.own[ID] && s.own[ID].moved),
  evaluate(window, lim) {
    // The gate, every sample: the counter's rise over the window, in a loop that allocates nothing.
    let first = null;
    let last = null;
    for (let i = 0; i < window.length; i++) {
      const o = window[i].own && window[i].own[ID];
      if (!o) continue;
      if (first === null) first = o;
      last = o;
    }
    if (first === null || last === first || last.overflows - first.overflows < lim.listenOverflows) return null;
    // What it says (lib/findings/found/listen-queue-overflow.js) loads the first time the gate passes.
    return require('../found/listen-queue-overflow').found(window, lim);
  },
});
