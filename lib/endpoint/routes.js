'use strict';

// The agent's own routes on its endpoint: the snapshot uvscope report reads, the page and the
// history its charts start from. Exporters add theirs (/metrics) themselves.

const { sendBody } = require('./server');
const page = require('../report/page');

const NO_STORE = Object.freeze({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });

/**
 * Add /snapshot.json, / and /history.json to the agent's endpoint. A route is one line.
 * @param {import('./server').AgentServer} server
 * @param {{ latest: () => object|null, history: () => object[] }} agent this process's latest
 *   snapshot, and the page's compact history (lib/report/page)
 */
function addAgentRoutes(server, { latest, history }) {
  // The latest snapshot with its findings (uvscope report reads this); other processes of the
  // app served here follow under processes (lib/endpoint/multiprocess/).
  server.route('/snapshot.json', (req, res) => {
    const snapshot = latest();
    const own = snapshot ? { pid: process.pid, ...snapshot } : null;
    const others = server.others();
    sendBody(req, res, 'application/json', JSON.stringify(others.length === 0 ? own : { ...own, processes: others }));
  }, 'findings');
  // The page (lib/report/page) and the compact history its charts start from.
  server.route('/', (req, res) => sendBody(req, res, 'text/html; charset=utf-8', page.pageHtml(), NO_STORE), 'the page');
  server.route('/history.json', (req, res) => sendBody(req, res, 'application/json', JSON.stringify(history()), NO_STORE));
}

module.exports = { addAgentRoutes };
