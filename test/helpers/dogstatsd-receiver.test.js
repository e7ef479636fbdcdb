'use strict';

const assert = require('node:assert/strict');
const dgram = require('node:dgram');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createDogStatsdReceiver, parseLine, parseDatagram, udsSupport } = require('./dogstatsd-receiver');

describe('helpers/dogstatsd-receiver', () => {
  it('parses name, values, type, sample rate, tags and extension fields', () => {
    assert.deepEqual(parseLine('dns.lookup.duration:0.25|d|@0.5|#service:api,dns_question_name:a.test|c:in-42'), {
      name: 'dns.lookup.duration', values: [0.25], value: 0.25, type: 'd', rate: 0.5,
      tags: ['service:api', 'dns_question_name:a.test'], fields: { c: 'in-42' },
    });
    assert.deepEqual(parseLine('x.y:1:2:3|h').values, [1, 2, 3]);
    assert.equal(parseLine('g:-1.5e-3|g|T1700000000').fields.T, 1700000000);
    assert.equal(parseDatagram('a:1|c\nb:2|g\n').length, 2);
  });

  it('rejects malformed lines', () => {
    for (const bad of ['', 'a', 'a:1', ':1|c', '1a:1|c', 'a b:1|c', 'a:x|g', 'a:NaN|g', 'a:1|q', 'a:1|c|@0', 'a:1|c|@1.5',
      'a:1|c|#', 'a:1|c|#a,,b', 'a:1|c|#a b', 'a:1|c|#:v', 'a:1|c|zz', 'a:1|c|@0.5|@0.5', 'a:1|c|c:']) {
      assert.throws(() => parseLine(bad), undefined, `accepted ${JSON.stringify(bad)}`);
    }
  });

  it('receives UDP datagrams and keeps rejected lines apart', async () => {
    const r = await createDogStatsdReceiver();
    const s = dgram.createSocket('udp4');
    try {
      s.send('a.b:1|g|#k:v\nbroken line\nc:2|c', r.port, '127.0.0.1');
      await r.waitFor(() => r.metrics.length === 2 && r.rejected.length === 1, 5000);
      assert.deepEqual(r.find('a.b', ['k:v']).map((m) => m.value), [1]);
      assert.equal(r.rejected[0].line, 'broken line');
    } finally {
      s.close();
      await r.close();
    }
  });

  it('receives Unix datagrams', async function () {
    const support = udsSupport();
    if (!support.ok) this.skip(); // documented in docs/datadog.md: unix-dgram is a native build
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-dsd-'));
    const file = path.join(dir, 'dsd.socket');
    const r = await createDogStatsdReceiver({ path: file });
    try {
      const unixDgram = require('unix-dgram');
      const c = unixDgram.createSocket('unix_dgram');
      const buf = Buffer.from('u.d:3|g');
      c.send(buf, 0, buf.length, file, () => {});
      c.close();
      await r.waitFor(() => r.metrics.length === 1, 5000);
      assert.equal(r.find('u.d')[0].value, 3);
    } finally {
      await r.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
