'use strict';

const http = require('node:http');
const zlib = require('node:zlib');
const protobuf = require('protobufjs');
const grpc = require('@grpc/grpc-js');
const PROTO = require('../fixtures/otlp-proto');

const root = new protobuf.Root();
for (const text of Object.values(PROTO)) protobuf.parse(text, root, { keepCase: false });
root.resolveAll();
const Request = root.lookupType('opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest');
const Response = root.lookupType('opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse');
const TO_OBJECT = { longs: Number, enums: Number, bytes: String, defaults: true, arrays: true, oneofs: true };

/**
 * A protobuf ExportMetricsServiceRequest (OTLP http/protobuf and gRPC bodies) as a plain object.
 * @param {Uint8Array} buf
 */
function decodeProtobuf(buf) {
  return Request.toObject(Request.decode(buf), TO_OBJECT);
}

/**
 * An OTLP/JSON request body as the same plain object decodeProtobuf() gives: protobufjs reads the
 * JSON mapping (lowerCamelCase names, 64-bit integers as strings) with fromObject().
 * @param {string} text
 */
function decodeJson(text) {
  return Request.toObject(Request.fromObject(JSON.parse(text)), TO_OBJECT);
}

function anyValue(v) {
  if (!v || !v.value) return undefined;
  if (v.value === 'arrayValue') return (v.arrayValue.values || []).map(anyValue);
  return v[v.value];
}

function attributes(list) {
  const out = {};
  for (const kv of list || []) out[kv.key] = anyValue(kv.value);
  return out;
}

/**
 * Flatten a decoded request into one row per metric:
 * { resource, scope, name, unit, description, kind ('gauge'|'sum'|'histogram'|...), temporality,
 *   monotonic, points: [{ attributes, value?, count?, sum?, min?, max?, bounds?, counts?,
 *   start, time }] } (times in ns as numbers; precise to ~µs, enough for ordering).
 * @param {object} request decodeProtobuf()/decodeJson() result
 */
function flatten(request) {
  const rows = [];
  for (const rm of request.resourceMetrics || []) {
    const resource = attributes(rm.resource && rm.resource.attributes);
    for (const sm of rm.scopeMetrics || []) {
      const scope = { name: sm.scope && sm.scope.name, version: sm.scope && sm.scope.version };
      for (const m of sm.metrics || []) {
        const kind = m.data;
        const data = m[kind] || {};
        const points = (data.dataPoints || []).map((p) => {
          const point = { attributes: attributes(p.attributes), start: p.startTimeUnixNano, time: p.timeUnixNano };
          if (kind === 'histogram') {
            Object.assign(point, { count: p.count, sum: p.sum, bounds: p.explicitBounds, counts: p.bucketCounts });
            if (p._min === 'min' || p.min !== undefined) point.min = p.min;
            if (p._max === 'max' || p.max !== undefined) point.max = p.max;
          } else {
            point.value = p.value ? p[p.value] : undefined;
          }
          return point;
        });
        rows.push({ resource, scope, name: m.name, unit: m.unit, description: m.description, kind, temporality: data.aggregationTemporality, monotonic: data.isMonotonic, points });
      }
    }
  }
  return rows;
}

/**
 * An OTLP/gRPC MetricsService on 127.0.0.1:port; track.received() each request, track.answered()
 * when it is answered (never, with hang).
 * @returns {Promise<{ port: number, close: () => Promise<void> }>}
 */
async function listenGrpc(port, hang, track) {
  const server = new grpc.Server();
  const stuck = [];
  server.addService({
    Export: {
      path: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
      requestStream: false,
      responseStream: false,
      requestSerialize: (o) => Buffer.from(Request.encode(Request.fromObject(o)).finish()),
      requestDeserialize: (buf) => buf,
      responseSerialize: () => Buffer.from(Response.encode(Response.create({})).finish()),
      responseDeserialize: (buf) => Response.decode(buf),
    },
  }, {
    Export(call, callback) {
      track.received({ transport: 'grpc', headers: call.metadata.getMap(), contentType: 'application/grpc', body: decodeProtobuf(call.request) });
      if (hang) {
        stuck.push(callback);
        return;
      }
      track.answered();
      callback(null, {});
    },
  });
  const boundPort = await new Promise((resolve, reject) => {
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  const close = () => new Promise((resolve) => {
    server.forceShutdown();
    resolve();
  });
  return { port: boundPort, close };
}

/**
 * An OTLP/HTTP receiver (protobuf or JSON, gzip or not, on /v1/metrics) on 127.0.0.1:port;
 * track.received() each request, track.answered() when it is answered (never, with hang).
 * @returns {Promise<{ port: number, close: () => Promise<void> }>}
 */
async function listenHttp(port, hang, track) {
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
      const contentType = String(req.headers['content-type'] || '').split(';')[0];
      let decoded;
      let error;
      try {
        if (req.url !== '/v1/metrics') throw new Error(`unexpected path ${req.url}`);
        decoded = contentType === 'application/json' ? decodeJson(body.toString('utf8')) : decodeProtobuf(body);
      } catch (err) {
        error = err;
      }
      track.received({ transport: 'http', path: req.url, headers: req.headers, contentType, body: decoded, error });
      if (hang) return;
      track.answered();
      if (error) {
        res.writeHead(400).end(error.message);
      } else if (contentType === 'application/json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(Response.encode(Response.create({})).finish()));
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const close = () => new Promise((resolve) => {
    for (const s of sockets) s.destroy();
    server.close(() => resolve());
  });
  return { port: server.address().port, close };
}

/**
 * An OTLP metrics receiver on 127.0.0.1 for tests: OTLP/HTTP (protobuf and JSON, on /v1/metrics)
 * or OTLP/gRPC (MetricsService/Export). Requests are decoded with the official .proto definitions
 * (test/fixtures/otlp-proto.js) and kept with their headers.
 * @param {object} [options]
 * @param {'http'|'grpc'} [options.transport='http']
 * @param {number} [options.port=0]
 * @param {boolean} [options.hang=false] accept requests and never answer (a stuck collector)
 * @returns {Promise<OtlpReceiver>}
 */
async function createOtlpReceiver({ transport = 'http', port = 0, hang = false } = {}) {
  const requests = [];
  const waiters = new Set();
  let open = 0;
  let maxOpen = 0;
  const track = {
    received(entry) {
      open++;
      maxOpen = Math.max(maxOpen, open);
      requests.push(entry);
      for (const w of [...waiters]) w();
    },
    answered() {
      open--;
    },
  };
  const { port: boundPort, close } = await (transport === 'grpc' ? listenGrpc : listenHttp)(port, hang, track);

  return {
    port: boundPort,
    /** The endpoint an exporter is given (OTEL_EXPORTER_OTLP_ENDPOINT). */
    endpoint: `http://127.0.0.1:${boundPort}`,
    /** Every request, in arrival order: { transport, headers, contentType, body, error? }. */
    requests,
    /** Requests received and not answered now, and the most there ever were at once. */
    get open() {
      return open;
    },
    get maxOpen() {
      return maxOpen;
    },
    /** All metric rows of all requests, in arrival order (see flatten()). */
    metrics() {
      return requests.filter((r) => r.body).flatMap((r) => flatten(r.body));
    },
    /**
     * Resolve once predicate(receiver) is true (checked on every request), reject after timeoutMs.
     * @param {(receiver: object) => boolean} predicate
     */
    waitFor(predicate, timeoutMs = 10000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          let ok;
          try {
            ok = predicate(this);
          } catch {
            ok = false;
          }
          if (!ok) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`OTLP receiver: condition not met within ${timeoutMs} ms (${requests.length} requests)`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close,
  };
}

module.exports = { createOtlpReceiver, decodeProtobuf, decodeJson, flatten };
