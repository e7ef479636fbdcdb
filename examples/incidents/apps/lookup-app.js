'use strict';
// ko: an app that resolves its dependency's name now and then.
const dns = require('dns');

const name = process.env.LOOKUP_NAME;
const results = [];
const once = () => {
  const start = Date.now();
  dns.lookup(name, (err) => results.push({ ms: Date.now() - start, code: err ? err.code : null }));
};
once();
setInterval(once, 500);
console.log(JSON.stringify({ name }));
