/**
 * HTTP/1.1 on the wire, as much as the shim's talk with ferryd needs: one request per connection
 * (`Connection: close`), an answer framed by Content-Length, chunked, or the end of the connection.
 * Pure (bytes in, bytes out) so the Bun binary's libc transport (client-libc.ts) stays small and this is
 * tested under Node. Plain Uint8Arrays, no Buffer: in the Bun binary, Buffer pages in code of its own.
 */
import { concatBytes, utf8Decode, utf8Encode, utf8Length } from '@ferry/sys/utf8';
import type { HttpResponse, RequestOptions } from './request';

/** ferryd's answer broke HTTP/1.1, or the connection ended before a whole answer. */
export class HttpProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HttpProtocolError';
  }
}

/** The bytes of one request. */
export function encodeRequest(o: Pick<RequestOptions, 'method' | 'path' | 'headers' | 'body'>): Uint8Array {
  // The path is built from encodeURIComponent'd parts; a space or line break would end the request line.
  if (!/^\/[\x21-\x7e]*$/.test(o.path)) throw new Error(`request path ${JSON.stringify(o.path)} is not a URL path`);
  const body = o.body === undefined ? '' : o.body;
  const framing =
    o.body === undefined ? '' : `Content-Type: application/json\r\nContent-Length: ${utf8Length(body)}\r\n`;
  let fields = '';
  for (const name in o.headers) fields += `${name}: ${o.headers[name]}\r\n`;
  return utf8Encode(
    `${o.method} ${o.path} HTTP/1.1\r\nHost: ferryd\r\nConnection: close\r\n${fields}${framing}\r\n${body}`,
  );
}

const CR = 13;
const LF = 10;

/**
 * The answer in `bytes` (everything read so far), or undefined while more is needed. `ended`: the peer has
 * closed, so nothing more will come. Throws HttpProtocolError on a malformed or truncated answer.
 */
export function parseResponse(bytes: Uint8Array, ended: boolean): HttpResponse | undefined {
  const headEnd = indexOfEmptyLine(bytes);
  if (headEnd < 0) return needMore(ended, 'before the end of the headers');
  const [statusLine = '', ...fields] = utf8Decode(bytes.subarray(0, headEnd)).split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(statusLine);
  if (!m) throw new HttpProtocolError(`not an HTTP/1.1 status line: ${JSON.stringify(statusLine.slice(0, 80))}`);
  const status = Number(m[1]);
  const headers = parseFields(fields);
  const rest = bytes.subarray(headEnd + 4);
  // An interim answer (1xx) comes before the real one; neither a 204 nor a 304 has a body.
  if (status < 200) return parseResponse(rest, ended);
  if (status === 204 || status === 304) return { status, headers, body: '' };
  if (/(?:^|,)\s*chunked\s*$/i.test(headers.get('transfer-encoding') ?? '')) {
    const body = dechunk(rest);
    return body === undefined
      ? needMore(ended, 'inside the chunked body')
      : { status, headers, body: utf8Decode(body) };
  }
  const length = headers.get('content-length');
  if (length !== undefined) {
    if (!/^\d{1,15}$/.test(length)) throw new HttpProtocolError(`bad Content-Length ${JSON.stringify(length)}`);
    if (rest.length < Number(length)) return needMore(ended, `after ${rest.length} of ${length} body bytes`);
    return { status, headers, body: utf8Decode(rest.subarray(0, Number(length))) };
  }
  // No framing: the body is everything up to the end of the connection.
  return ended ? { status, headers, body: utf8Decode(rest) } : undefined;
}

/** Where the first CRLF CRLF starts, or -1. */
function indexOfEmptyLine(b: Uint8Array): number {
  for (let i = 0; i + 3 < b.length; i++) {
    if (b[i] === CR && b[i + 1] === LF && b[i + 2] === CR && b[i + 3] === LF) return i;
  }
  return -1;
}

/** Where the first CRLF at or after `from` starts, or -1. */
function indexOfCrlf(b: Uint8Array, from: number): number {
  for (let i = from; i + 1 < b.length; i++) if (b[i] === CR && b[i + 1] === LF) return i;
  return -1;
}

function needMore(ended: boolean, where: string): undefined {
  if (ended) throw new HttpProtocolError(`the connection closed ${where}`);
  return undefined;
}

/** Header fields by lower-case name; repeated fields joined with commas, as RFC 9110 allows. */
function parseFields(lines: string[]): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new HttpProtocolError(`bad header line ${JSON.stringify(line.slice(0, 80))}`);
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    const seen = fields.get(name);
    fields.set(name, seen === undefined ? value : `${seen},${value}`);
  }
  return fields;
}

/** The data of a whole chunked body, or undefined while it is incomplete. Trailers are read and dropped. */
function dechunk(bytes: Uint8Array): Uint8Array | undefined {
  const parts: Uint8Array[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = indexOfCrlf(bytes, at);
    if (lineEnd < 0) return undefined;
    const sizeText = utf8Decode(bytes.subarray(at, lineEnd)).split(';')[0]?.trim() ?? '';
    if (!/^[0-9a-f]{1,12}$/i.test(sizeText)) {
      throw new HttpProtocolError(`bad chunk size ${JSON.stringify(sizeText.slice(0, 20))}`);
    }
    const size = Number.parseInt(sizeText, 16);
    at = lineEnd + 2;
    if (size === 0) break;
    if (bytes.length < at + size + 2) return undefined;
    if (bytes[at + size] !== CR || bytes[at + size + 1] !== LF) {
      throw new HttpProtocolError('a chunk is longer than its size');
    }
    parts.push(bytes.subarray(at, at + size));
    at += size + 2;
  }
  // Trailer fields, each ending in CRLF, then an empty line.
  for (;;) {
    const lineEnd = indexOfCrlf(bytes, at);
    if (lineEnd < 0) return undefined;
    if (lineEnd === at) return concatBytes(parts);
    at = lineEnd + 2;
  }
}
