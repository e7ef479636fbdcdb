'use strict';

const assert = require('node:assert/strict');
const net = require('net');
const { createResourcesSampler, isRequestType, countTypes } = require('../../lib/sources/resources');

const find = (points, name, type) => (points.find((p) => p.name === name && Object.values(p.attributes)[0] === type) || {}).value;

describe('samplers/resources', () => {
  it('splits Node\'s resource types into requests and handles', () => {
    for (const t of ['GetAddrInfoReqWrap', 'GetNameInfoReqWrap', 'FSReqCallback', 'FSReqPromise', 'QueryReqWrap', 'WriteWrap', 'ShutdownWrap', 'SendWrap', 'FileHandleCloseReq']) {
      assert.ok(isRequestType(t), t);
    }
    for (const t of ['TCPSocketWrap', 'TCPServerWrap', 'PipeWrap', 'TTYWrap', 'UDPWrap', 'Timeout', 'Immediate', 'ProcessWrap', 'FSEventWrap', 'SignalWrap']) {
      assert.ok(!isRequestType(t), t);
    }
  });

  it('counts the real sockets and servers the test opens, and reports 0 for a type once it is gone', async () => {
    const sampler = createResourcesSampler();
    let accepted = 0;
    let allAccepted;
    const acceptedAll = new Promise((r) => (allAccepted = r));
    const server = net.createServer((s) => {
      s.on('error', () => {});
      if (++accepted === 3) allAccepted();
    }).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const clients = await Promise.all(Array.from({ length: 3 }, () => new Promise((resolve) => {
      const c = net.connect(server.address().port, '127.0.0.1', () => resolve(c));
    })));
    await acceptedAll;
    const before = countTypes(process.getActiveResourcesInfo()).get('TCPSocketWrap') || 0;
    const open = sampler.sample({ resources: countTypes(process.getActiveResourcesInfo()) });
    assert.equal(find(open, 'nodejs.uv.handles.active', 'TCPSocketWrap'), before);
    assert.ok(before >= 6, `3 clients and 3 accepted sockets, got ${before}`);
    assert.ok(find(open, 'nodejs.uv.handles.active', 'TCPServerWrap') >= 1);

    for (const c of clients) c.destroy();
    await new Promise((r) => server.close(r));
    await new Promise((r) => setTimeout(r, 50));
    const closed = sampler.sample({ resources: countTypes(process.getActiveResourcesInfo()) });
    assert.equal(find(closed, 'nodejs.uv.handles.active', 'TCPServerWrap'), 0, 'a vanished type reports 0');
  });

  it('reports GetAddrInfoReqWrap as 0 from the first sample, so a backlog alert has a series', () => {
    const points = createResourcesSampler().sample({ resources: new Map() });
    assert.equal(find(points, 'nodejs.uv.requests.active', 'GetAddrInfoReqWrap'), 0);
  });

  it('past 256 types of a kind, reports the others while they are there and drops them once gone; each sample counts afresh', () => {
    const sampler = createResourcesSampler();
    const types = Array.from({ length: 300 }, (_, i) => `Type${i}Wrap`);
    const handles = (points) => points.filter((p) => p.name === 'nodejs.uv.handles.active');
    const all = handles(sampler.sample({ resources: new Map(types.map((t, i) => [t, i + 1])) }));
    assert.equal(all.length, 300);
    assert.equal(all.reduce((a, p) => a + p.value, 0), (300 * 301) / 2);
    // Only Type0Wrap left, with 7: the 255 other types seen report 0, the 44 past the bound nothing.
    const after = handles(sampler.sample({ resources: new Map([['Type0Wrap', 7]]) }));
    assert.equal(after.length, 256);
    assert.equal(find(after, 'nodejs.uv.handles.active', 'Type0Wrap'), 7);
    assert.equal(after.reduce((a, p) => a + p.value, 0), 7);
    assert.equal(after.filter((p) => p.attributes['nodejs.uv.handle.type'] === 'Type299Wrap').length, 0);
    // Back, with another count: read from this sample, not added to the last.
    const back = handles(sampler.sample({ resources: new Map([['Type299Wrap', 2]]) }));
    assert.equal(find(back, 'nodejs.uv.handles.active', 'Type299Wrap'), 2);
    assert.equal(find(back, 'nodejs.uv.handles.active', 'Type0Wrap'), 0);
  });
});
