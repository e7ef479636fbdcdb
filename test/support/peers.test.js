'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const { ddTraceMajor, ddTraceInit, otelSdkMajor, requireOtel } = require('../../support/peers');

describe('support/peers: the peer line tested on this Node', function () {
  const [major, minor] = process.versions.node.split('.').map(Number);

  it('dd-trace 6 on Node 22+, dd-trace 5 on Node 20', () => {
    assert.equal(ddTraceMajor(), major >= 22 ? 6 : 5);
    assert.ok(fs.existsSync(ddTraceInit), ddTraceInit);
  });

  it('the OpenTelemetry SDK 3 line on Node 22.15+, else SDK 2, with the API each needs', () => {
    const sdk3 = major > 22 || (major === 22 && minor >= 15);
    assert.equal(otelSdkMajor(), sdk3 ? 3 : 2);
    const entry = requireOtel.resolve('@opentelemetry/api');
    const api = JSON.parse(fs.readFileSync(`${entry.slice(0, entry.lastIndexOf('@opentelemetry/api') + '@opentelemetry/api'.length)}/package.json`, 'utf8'));
    assert.match(api.version, sdk3 ? /^1\.10\./ : /^1\.9\./);
  });
});
