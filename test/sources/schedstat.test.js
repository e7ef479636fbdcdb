'use strict';

// The schedstat reader (lib/sources/schedstat.js): its fields read from the bytes are the numbers
// Number() reads from the same text split at spaces, the way the sampler read them before.

const assert = require('assert');
const { openSchedstat, _internal: { fieldAt } } = require('../../lib/sources/schedstat');

describe('schedstat fields read from the bytes (lib/sources/schedstat.js)', function () {
  it('gives what Number() gives for each field of random lines, short, long and malformed ones included', function () {
    const pick = (list) => list[Math.floor(Math.random() * list.length)];
    const field = () => pick([
      () => String(Math.floor(Math.random() * 1e6)),
      () => String(Math.floor(Math.random() * 2 ** 53)),
      () => '9'.repeat(16 + Math.floor(Math.random() * 5)), // past 15 digits: through a string
      () => '0',
      () => '',
      () => '12a4',
      () => '-5',
    ])();
    for (let round = 0; round < 20000; round++) {
      const fields = Array.from({ length: 1 + Math.floor(Math.random() * 3) }, field);
      const text = fields.join(' ') + pick(['\n', '', ' \n']);
      const buf = Buffer.alloc(128);
      const n = buf.write(text, 'latin1');
      const split = text.split(' ');
      for (const i of [0, 1]) {
        const want = Number(split[i]);
        const got = fieldAt(buf, n, i);
        assert.ok(Object.is(got, want) || (Number.isNaN(got) && Number.isNaN(want)), `${JSON.stringify(text)} field ${i}: ${got} against ${want}`);
      }
    }
  });

  it('reads this thread\'s file as the kernel writes it (Linux), else null', function () {
    const sched = openSchedstat();
    if (process.platform !== 'linux') return assert.equal(sched, null);
    if (!sched) this.skip(); // a kernel without schedstat
    const text = require('fs').readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ');
    const [cpu, wait] = sched.read();
    // The file moves between the two reads: the later read is not below the earlier one.
    assert.ok(cpu >= Number(text[0]) && wait >= Number(text[1]), `${cpu} ${wait} against ${text}`);
    sched.close();
    assert.equal(sched.read(), null);
  });
});
