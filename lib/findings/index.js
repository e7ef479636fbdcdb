'use strict';

// lib/findings: snapshots become findings, claims about the app with the figures that prove them.
//   engine.js   keeps the window of interval summaries, runs the rules, ranks what they find
//   signals.js  each judgement about an interval, made once (the pool held, the loop blocked and
//               for how long, threads starved of a CPU, ...): rules, the report and the page read them
//   window.js   one summary per interval, and the helpers rules share over the window
//   hosts.js    the window's per-hostname figures
//   pool.js     the threadpool figures of an interval (probes, pending work, tracer, busy threads)
//   cpu.js      the CPU figures of an interval and the CPU budget
//   blockers.js an interval's blocks of the loop and what ran in them (the capture's), kept small
//   rule.js     what a rule declares (id, limits, docs, evaluate, its own state, when an interval
//               is quiet for it) and its check
//   rules/      one file per rule: its declaration and its gate (what runs every sample)
//   found/      what a rule says once its gate passed, loaded then (most processes never need it);
//               found/blockers.js names what blocked the loop, for every finding that says it
// May import lib/core, lib/sources (their pure helpers) and lib/snapshot; nothing above.
//
// Adding a rule: rules/<id>.js (defineRule), its test in test/findings/, and one line here. It
// reads the interval's signals (signals.js) rather than judging the figures again; a judgement a
// second reader needs becomes a signal. Its quiet() says when an interval gives it nothing to fire
// on: the engine skips its evaluate() while the whole window is quiet, and the findings tests
// (checkQuiet) throw where a quiet window fires. A rule whose evaluation is more than a gate and a few
// lines keeps the rest in found/<id>.js, required inside evaluate() once the gate passed (as
// cpu-starved.js does).
// The order is the order of evaluation; findings of equal impact keep it.

module.exports = Object.freeze([
  require('./rules/threadpool-saturated'),
  require('./rules/threadpool-dns-saturated'),
  require('./rules/cpu-starved'),
  require('./rules/dns-resolver-timeout'),
  require('./rules/dns-no-cache'),
  require('./rules/dns-search-expansion'),
  require('./rules/eventloop-blocked'),
  require('./rules/listen-queue-overflow'),
  require('./rules/http-no-keepalive'),
  require('./rules/heap-limit-above-container'),
  require('./rules/cpu-throttled'),
  require('./rules/dns-tail-latency'),
]);
