'use strict';
// csv: "the event-loop delay tells us the loop was blocked; it doesn't say by what". A POST
// /import handler parses an uploaded 40,000-row CSV synchronously (100-300 ms on the loop) while
// other clients check GET /health. uvscope's capture of what blocks the loop (UVSCOPE_BLOCKERS)
// names the parser, its line and the route. Needs no DNS server.
const http = require('http');
const { startApp, printFindings } = require('./common');

/** A CSV of `rows` rows (id, a quoted name with a comma, amount, email, city, note), ~110 bytes a row. */
function csvOf(rows) {
  const lines = ['id,name,amount,email,city,note'];
  for (let i = 1; i <= rows; i++) lines.push(`${i},"Customer ${i}, Ltd",${(i % 997) / 10},customer${i}@example.com,Springfield,"said ""hello"" on ${i % 28 + 1} Feb"`);
  return `${lines.join('\n')}\n`;
}

function request(port, method, path, body) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: body ? { 'content-type': 'text/csv' } : {} }, (res) => {
      let s = '';
      res.on('data', (d) => { s += d; });
      res.on('end', () => resolve({ body: s, seconds: Number(process.hrtime.bigint() - t0) / 1e9 }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Run the csv incident: `uploads` imports one after another, a health check every 50 ms meanwhile.
 * @param {{ print?: (line: string) => void, rows?: number, uploads?: number, spawnWith?: Function }} [options]
 */
async function run({ print = console.log, rows = 40000, uploads = 8, spawnWith } = {}) {
  print(`csv: POST /import parses an uploaded ${rows.toLocaleString('en-US')}-row CSV synchronously, ${uploads} uploads one after another, GET /health every 50 ms.`);
  const app = await startApp({ app: 'import-app.js', namespace: false, spawnWith, env: { UVSCOPE_BLOCKERS: 'on' } });
  try {
    const port = app.ready.port;
    const csv = csvOf(rows);
    let stop = false;
    const health = [];
    const checks = (async () => {
      while (!stop) {
        health.push((await request(port, 'GET', '/health')).seconds);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const imports = [];
    for (let i = 0; i < uploads; i++) {
      const r = await request(port, 'POST', '/import?source=upload', csv);
      imports.push({ ...JSON.parse(r.body), seconds: r.seconds });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    stop = true;
    await checks;
    await new Promise((r) => setTimeout(r, 600)); // the agent's samples after the last import
    const snapshot = await app.snapshot();
    const slowest = Math.max(...health);
    print(`  ${imports.length} imports of ${imports[0].rows} rows in ${Math.round(Math.min(...imports.map((x) => x.seconds)) * 1000)}-${Math.round(Math.max(...imports.map((x) => x.seconds)) * 1000)} ms; health checks up to ${Math.round(slowest * 1000)} ms`);
    printFindings(print, snapshot);
    return { findings: snapshot.findings.map((f) => f.id), snapshot, imports, health, rows };
  } finally {
    await app.stop();
  }
}

if (require.main === module) run().catch((err) => { console.error(err); process.exitCode = 1; });

module.exports = { run, csvOf };
