import { expect, test } from 'vitest';
import { encodeRequest, HttpProtocolError, parseResponse } from './http1';

const bytes = (text: string) => Buffer.from(text, 'utf8');
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

/** Feeds `answer` to the parser cut at every offset, as reads of any size would deliver it. */
function everySplit(answer: string): void {
  const all = bytes(answer);
  for (let cut = 0; cut < all.length; cut++) {
    expect(parseResponse(all.subarray(0, cut), false), `complete after only ${cut} bytes`).toBeUndefined();
  }
}

test('a request with a body: request line, Host, Connection: close, JSON framing by byte length', () => {
  expect(text(encodeRequest({ method: 'POST', path: '/v1/allocations', body: '{"n":"é"}' }))).toBe(
    'POST /v1/allocations HTTP/1.1\r\nHost: ferryd\r\nConnection: close\r\n' +
      'Content-Type: application/json\r\nContent-Length: 10\r\n\r\n{"n":"é"}',
  );
});

test('a request without a body has no framing headers', () => {
  expect(text(encodeRequest({ method: 'GET', path: '/v1/endpoints/abc?network=ferry' }))).toBe(
    'GET /v1/endpoints/abc?network=ferry HTTP/1.1\r\nHost: ferryd\r\nConnection: close\r\n\r\n',
  );
});

test('header fields go after Connection, before the framing; answer fields come back by lower-case name', () => {
  const request = encodeRequest({ method: 'GET', path: '/v1/endpoints/abc', headers: { 'ferry-api': '1' } });
  expect(text(request)).toBe(
    'GET /v1/endpoints/abc HTTP/1.1\r\nHost: ferryd\r\nConnection: close\r\nferry-api: 1\r\n\r\n',
  );
  const answer = 'HTTP/1.1 200 OK\r\nFerry-API: 1\r\nVia: a\r\nvia:  b \r\nContent-Length: 0\r\n\r\n';
  expect(parseResponse(bytes(answer), false)?.headers).toEqual(
    new Map([
      ['ferry-api', '1'],
      ['via', 'a,b'],
      ['content-length', '0'],
    ]),
  );
});

test('a path that would break the request line is refused', () => {
  expect(() => encodeRequest({ method: 'GET', path: '/a b' })).toThrow(/not a URL path/);
  expect(() => encodeRequest({ method: 'GET', path: '/a\r\nX-Evil: 1' })).toThrow(/not a URL path/);
});

test('Content-Length: complete exactly when the body is, whatever the reads; bytes past it are ignored', () => {
  const answer = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 12\r\n\r\n{"ok":"ü!"}';
  everySplit(answer);
  const headers = new Map([
    ['content-type', 'application/json'],
    ['content-length', '12'],
  ]);
  expect(parseResponse(bytes(answer), false)).toEqual({ status: 200, headers, body: '{"ok":"ü!"}' });
  expect(parseResponse(bytes(`${answer}garbage`), false)).toEqual({ status: 200, headers, body: '{"ok":"ü!"}' });
});

test('chunked: the chunks joined (a character split between chunks too), extensions and trailers dropped', () => {
  const e = bytes('é');
  const body = Buffer.concat([
    bytes('HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n'),
    bytes('3;ext=1\r\n{"a\r\n'),
    bytes('1\r\n'),
    e.subarray(0, 1),
    bytes('\r\n1\r\n'),
    e.subarray(1),
    bytes('\r\n9\r\n","b":12}\r\n'),
    bytes('0\r\nX-Trailer: t\r\n\r\n'),
  ]);
  for (let cut = 0; cut < body.length; cut++) expect(parseResponse(body.subarray(0, cut), false)).toBeUndefined();
  const headers = new Map([['transfer-encoding', 'chunked']]);
  expect(parseResponse(body, false)).toEqual({ status: 404, headers, body: '{"aé","b":12}' });
});

test('chunked wins over a Content-Length sent with it', () => {
  const answer = 'HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n';
  const headers = new Map([
    ['content-length', '99'],
    ['transfer-encoding', 'chunked'],
  ]);
  expect(parseResponse(bytes(answer), false)).toEqual({ status: 200, headers, body: 'ok' });
});

test('no framing: the body ends with the connection', () => {
  const answer = bytes('HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"x":1}');
  expect(parseResponse(answer, false)).toBeUndefined();
  const headers = new Map([['content-type', 'application/json']]);
  expect(parseResponse(answer, true)).toEqual({ status: 200, headers, body: '{"x":1}' });
});

test('204 has no body; an interim 100 is skipped for the answer after it', () => {
  const none = new Map();
  expect(parseResponse(bytes('HTTP/1.1 204 No Content\r\n\r\n'), false)).toEqual({
    status: 204,
    headers: none,
    body: '',
  });
  const answer = 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}';
  const headers = new Map([['content-length', '2']]);
  expect(parseResponse(bytes(answer), false)).toEqual({ status: 201, headers, body: '{}' });
});

test.for([
  ['nothing at all', ''],
  ['half a status line', 'HTTP/1.1 2'],
  ['headers without their end', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n'],
  ['a short body', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc'],
  ['a chunked body without its last chunk', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n'],
] as const)('closed with %s: a protocol error saying where', ([, answer]) => {
  expect(parseResponse(bytes(answer), false)).toBeUndefined();
  expect(() => parseResponse(bytes(answer), true)).toThrow(HttpProtocolError);
  expect(() => parseResponse(bytes(answer), true)).toThrow(/the connection closed/);
});

test.for([
  ['a status line that is not HTTP', 'SSH-2.0-OpenSSH_9.6\r\n\r\n', /not an HTTP\/1.1 status line/],
  ['a status that is not three digits', 'HTTP/1.1 2000 OK\r\n\r\n', /not an HTTP\/1.1 status line/],
  ['a header line without a colon', 'HTTP/1.1 200 OK\r\nnonsense\r\n\r\n', /bad header line/],
  ['a Content-Length that is not a number', 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n', /bad Content-Length/],
  [
    'two different Content-Lengths',
    'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
    /bad Content-Length/,
  ],
  ['a chunk size that is not hex', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', /bad chunk size/],
  [
    'a chunk longer than its size',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nok\r\n0\r\n\r\n',
    /longer than its size/,
  ],
] as const)('%s: a protocol error at once, without waiting for more', ([, answer, message]) => {
  expect(() => parseResponse(bytes(answer), false)).toThrow(message);
});
