'use strict';
// csv: an HTTP service whose POST /import reads an uploaded CSV and parses it synchronously on
// the event loop (a hand-written parser, as a sync parse entry of a CSV package would be), then
// sums a column; GET /health answers at once. Prints its port once listening.
const http = require('http');

/** Parses CSV text (quoted fields with "" escapes) into rows of fields: all at once, on the loop. */
function parseCsv(text) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') field += text[++i];
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field || row.length) rows.push([...row, field]);
  return rows;
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST' || !req.url.startsWith('/import')) return res.end('ok\n');
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const rows = parseCsv(Buffer.concat(chunks).toString('utf8'));
    let total = 0;
    for (let i = 1; i < rows.length; i++) total += Number(rows[i][2]) || 0;
    res.end(JSON.stringify({ rows: rows.length - 1, total }));
  });
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
