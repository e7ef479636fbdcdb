'use strict';
// npm start [-- [--keep] wolt|klarna|ko|zooz|csv|numa|crypto|starve|throttled|acceptq]: the incident lab. Each write-up in shared/incidents,
// reproduced for real against a DNS server the lab runs, with uvscope attached, and what uvscope
// found. Runs on 127.0.0.0/8 only.
const INCIDENTS = ['wolt', 'klarna', 'ko', 'zooz', 'csv', 'numa', 'crypto', 'starve', 'throttled', 'acceptq'];

async function main() {
  const args = process.argv.slice(2);
  // --keep: each chosen incident's app keeps running (its page stays up) until Ctrl-C.
  const keep = args.includes('--keep');
  const chosen = args.filter((a) => a !== '--keep');
  require('./incidents/common').configureLab({ keep, announce: (line) => console.log(line) });
  const unknown = chosen.filter((c) => !INCIDENTS.includes(c));
  if (unknown.length) {
    console.error(`unknown incident ${unknown.join(', ')}; choose from ${INCIDENTS.join(', ')}`);
    process.exitCode = 2;
    return;
  }
  for (const name of chosen.length ? chosen : INCIDENTS) {
    await require(`./incidents/${name}`).run();
    console.log('');
  }
  console.log('Your own app: node --require uvscope/register app.js, then open http://127.0.0.1:9464/ (the page), curl 127.0.0.1:9464/metrics or npx uvscope report');
  if (!keep) console.log('To look at an incident\'s page at leisure: npm start -- --keep klarna');
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
