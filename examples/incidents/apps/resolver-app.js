'use strict';
// numa: an app that resolves its dependency's name for each job, LOOKUPS_PER_SECOND times a
// second, one lookup at a time (no queue for the DNS slots).
const dns = require('dns');

const name = process.env.LOOKUP_NAME;
const perSecond = Number(process.env.LOOKUPS_PER_SECOND || 30);
setInterval(() => dns.lookup(name, () => {}), Math.round(1000 / perSecond));
console.log(JSON.stringify({ name, perSecond }));
