'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { check } = require('../../scripts/check-requires');

const SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'check-requires.js');

/** A made-up repository: files (relative path -> text) in a temp dir. */
function repository(files) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'uvscope-requires-'));
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.join(root, path.dirname(file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

describe('scripts/check-requires: no circle, no arrow back up', () => {
  const made = [];
  after(() => {
    for (const root of made) fs.rmSync(root, { recursive: true, force: true });
  });
  const make = (files) => {
    const root = repository(files);
    made.push(root);
    return root;
  };

  it('passes on the repository', () => {
    assert.deepEqual(check(), []);
  });

  it('fails on a circle, naming the files around it, lazy requires included', () => {
    const root = make({
      'lib/sources/a.js': "'use strict';\nrequire('./b');\n",
      'lib/sources/b.js': "'use strict';\nfunction later() { return require('./c'); }\nmodule.exports = { later };\n",
      'lib/sources/c.js': "'use strict';\n// require('./nothing') in a comment is not an import\nrequire('./a.js');\n",
    });
    assert.deepEqual(check(root), ['circle: lib/sources/a.js -> lib/sources/b.js -> lib/sources/c.js -> lib/sources/a.js']);
    assert.throws(() => execFileSync(process.execPath, [SCRIPT, root], { stdio: 'pipe' }), (err) => err.status === 1 && /circle: /.test(String(err.stderr)));
  });

  it('fails on an arrow back up: a layer requiring one to its right', () => {
    const root = make({
      'lib/core/faults.js': "'use strict';\nconst { readSetting } = require('../agent/options');\n",
      'lib/agent/options.js': "'use strict';\nmodule.exports = {};\n",
      'exporters/x/index.js': "'use strict';\nrequire('../../lib/core/faults');\n",
    });
    assert.deepEqual(check(root), ['arrow back up: lib/core/faults.js (core) requires lib/agent/options.js (agent), a layer to its right']);
  });

  it('passes on imports that point left or stay in their layer', () => {
    const root = make({
      'lib/index.js': "'use strict';\nrequire('./agent/agent');\n",
      'lib/agent/agent.js': "'use strict';\nrequire('../sources');\nrequire('../../exporters');\n",
      'lib/sources/index.js': "'use strict';\nrequire('./dns');\nrequire('../core/errors');\n",
      'lib/sources/dns/index.js': "'use strict';\nrequire('../../settings/parsers');\n",
      'lib/core/errors.js': "'use strict';\n",
      'lib/settings/parsers.js': "'use strict';\nrequire('net');\n",
      'exporters/index.js': "'use strict';\nrequire('../lib/core/errors');\n",
    });
    assert.deepEqual(check(root), []);
    execFileSync(process.execPath, [SCRIPT, root], { stdio: 'pipe' });
  });
});
