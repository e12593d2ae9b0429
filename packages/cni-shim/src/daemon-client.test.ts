import { type HttpResponse, type RequestOptions, UnreachableError } from '@ferry/http';
import { FERRY_API_HEADER } from '@ferry/shared-types/api/version';
import { Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import { DaemonClient, isDaemonDown, isNotListening } from './daemon-client';
import { openLog } from './log';
import type { Runtime } from './runtime/runtime';

const silent = openLog('/dev/null', 'silent');

// A fake runtime answers from a table: the client's own logic (error mapping, schema checks) is what
// these test; the real HTTP paths run in the e2e suite.
function client(answer: (o: RequestOptions) => Answer | Error): DaemonClient {
  const runtime: Runtime = {
    run: async () => ({ exitCode: 0, stdout: '', stderr: '' }),
    sha256Hex: () => '',
    request: (o) => ({
      answer: async () => {
        const a = answer(o);
        if (a instanceof Error) throw a;
        return fromFerryd(a);
      },
    }),
  };
  return new DaemonClient(runtime, '/run/ferry/ferryd.sock', { connectMs: 100, requestMs: 100 }, silent);
}

type Answer = Omit<HttpResponse, 'headers'> & { apiVersion?: string | null };

/** An answer as ferryd sends it: with its API version (API 1 unless `apiVersion` says; null: none). */
function fromFerryd({ apiVersion = '1', ...answer }: Answer): HttpResponse {
  return { ...answer, headers: new Map(apiVersion === null ? [] : [[FERRY_API_HEADER, apiVersion]]) };
}

test('unreachable becomes code 11 naming the socket', async () => {
  const c = client(() => new UnreachableError('ECONNREFUSED', 'refused'));
  await expect(c.release('abc', 'ferry', 'eth0')).rejects.toMatchObject({
    code: Code.TryAgainLater,
    message: 'ferryd at /run/ferry/ferryd.sock is unreachable: ECONNREFUSED',
  });
});

test.for([
  ['absent', true],
  ['refused', true],
  ['timeout', false],
  ['other', false],
] as const)('unreachable because %s: isNotListening is %s', async ([reason, expected]) => {
  const err = await client(() => new UnreachableError(reason, reason))
    .getEndpoint('abc')
    .answer()
    .catch((e: unknown) => e);
  expect(isDaemonDown(err)).toBe(true);
  expect(isNotListening(err)).toBe(expected);
});

test('ferryd answering code 11 itself is down but listening', async () => {
  const err = await client(() => ({ status: 503, body: JSON.stringify({ code: 11, msg: 'ferryd is starting' }) }))
    .getEndpoint('abc')
    .answer()
    .catch((e: unknown) => e);
  expect(isDaemonDown(err)).toBe(true);
  expect(isNotListening(err)).toBe(false);
});

test("an error body passes through with the daemon's code and details", async () => {
  const c = client(() => ({ status: 409, body: JSON.stringify({ code: 100, msg: 'pool exhausted', details: 'd' }) }));
  await expect(c.status('ferry')).rejects.toMatchObject({
    code: Code.PoolExhausted,
    message: 'pool exhausted',
    details: 'd',
  });
});

test('a body that is not the API is DaemonProtocol, whatever the status', async () => {
  await expect(client(() => ({ status: 200, body: '{"nope":1}' })).status('ferry')).rejects.toMatchObject({
    code: Code.DaemonProtocol,
  });
  await expect(client(() => ({ status: 502, body: '<html>' })).status('ferry')).rejects.toMatchObject({
    code: Code.DaemonProtocol,
    message: expect.stringContaining('HTTP 502'),
  });
});

test('getEndpoint maps EndpointNotFound to undefined', async () => {
  const c = client(() => ({
    status: 404,
    body: JSON.stringify({ code: Code.EndpointNotFound, msg: 'endpoint x: not found' }),
  }));
  expect(await c.getEndpoint('x').answer()).toBeUndefined();
});

test('waitReady asks again until its budget is spent, then gives up with code 11', async () => {
  let asked = 0;
  const c = client(() => {
    asked++;
    return { status: 503, body: JSON.stringify({ ready: false, phase: 'starting' }) };
  });
  await expect(c.waitReady(250)).rejects.toMatchObject({
    code: Code.TryAgainLater,
    message: expect.stringContaining('ferryd is starting'),
  });
  expect(asked).toBeGreaterThan(1);
});

test('releaseIfOnly says the host veth is deleted, returns what is left to tear down, refuses a foreign answer', async () => {
  const asked: string[] = [];
  const answers = [{ released: [] }, { released: [], toTearDown: [] }, { released: 'all' }];
  const c = client((o) => {
    asked.push(`${o.method} ${o.path}`);
    return { status: 200, body: JSON.stringify(answers[asked.length - 1]) };
  });
  expect(await c.releaseIfOnly('abc', 'ferry', 'eth0')).toEqual({ released: [] });
  expect(asked).toEqual(['DELETE /v1/endpoints/abc?network=ferry&ifName=eth0&hostVethDeleted=true']);
  expect(await c.releaseIfOnly('abc', 'ferry', 'eth0')).toEqual({ released: [], toTearDown: [] });
  await expect(c.releaseIfOnly('abc', 'ferry', 'eth0')).rejects.toMatchObject({
    code: Code.DaemonProtocol,
    message: expect.stringContaining('released'),
  });
});

test('every request states API 1; an answer of API 1 or 2 is used, any other (or none) is 117 naming both', async () => {
  const sent: (Readonly<Record<string, string>> | undefined)[] = [];
  const answerOf = (apiVersion: string | null) =>
    client((o) => {
      sent.push(o.headers);
      return { status: 200, body: JSON.stringify({ released: [] }), apiVersion };
    }).releaseIfOnly('abc', 'ferry', 'eth0');
  // In the rule: ferryd of the shim's API version, or one newer (it still serves the shim's).
  expect(await answerOf('1')).toEqual({ released: [] });
  expect(await answerOf('2')).toEqual({ released: [] });
  expect(sent).toEqual([{ 'ferry-api': '1' }, { 'ferry-api': '1' }]);
  const path = 'DELETE /v1/endpoints/abc?network=ferry&ifName=eth0&hostVethDeleted=true';
  await expect(answerOf('3')).rejects.toMatchObject({
    code: Code.ApiVersionSkew,
    message: `ferryd ${path}: ferry-cni speaks API 1, ferryd API 3: ferry-cni is more than one API version older than ferryd; install the ferry-cni of ferryd's release (ferryctl install --shim, as the ferryd container's postStart hook does)`,
  });
  await expect(answerOf(null)).rejects.toMatchObject({
    code: Code.ApiVersionSkew,
    message: expect.stringContaining('ferry-cni speaks API 1, ferryd API (none stated)'),
  });
  await expect(answerOf('one')).rejects.toMatchObject({ code: Code.ApiVersionSkew });
});

test('getEndpoint sends at once and waits for the answer only when asked, however long the caller works', async () => {
  const events: string[] = [];
  const runtime: Runtime = {
    run: async () => ({ exitCode: 0, stdout: '', stderr: '' }),
    sha256Hex: () => '',
    request: (o) => {
      events.push(`sent ${o.method} ${o.path}`);
      return {
        answer: async () => {
          events.push('answer read');
          return fromFerryd({ status: 404, body: JSON.stringify({ code: Code.EndpointNotFound, msg: 'none' }) });
        },
      };
    },
  };
  const c = new DaemonClient(runtime, '/run/ferry/ferryd.sock', { connectMs: 100, requestMs: 100 }, silent);
  const asked = c.getEndpoint('abc');
  expect(events).toEqual(['sent GET /v1/endpoints/abc']);
  // Promise chains and timers run while the caller works: none of them reads the answer.
  await new Promise((r) => setTimeout(r, 5));
  expect(events).toEqual(['sent GET /v1/endpoints/abc']);
  expect(await asked.answer()).toBeUndefined();
  expect(await asked.answer()).toBeUndefined();
  expect(events).toEqual(['sent GET /v1/endpoints/abc', 'answer read']);
});

test("an allocation the generated check leaves to the schema is the schema's to take or refuse", async () => {
  const allocation = {
    network: 'ferry',
    containerId: 'c1',
    ifName: 'eth0',
    generation: 1,
    nics: [
      {
        nicType: 'DelegatedNIC',
        ifName: 'net1',
        endpointId: 'c1-net1',
        mac: '02:00:00:00:00:01',
        hostIfName: 'ens5',
        // Embedded IPv4: zod takes it (it asks the URL parser), the pattern the check uses does not.
        addresses: [{ family: 6, address: '2001:db8::5/64', gateway: '::ffff:192.0.2.1' }],
        routes: [],
      },
    ],
  };
  const req = { network: 'ferry', containerId: 'c1', ifName: 'eth0', netns: '/var/run/netns/p' };
  const answering = (body: unknown) => client(() => ({ status: 200, body: JSON.stringify(body) }));
  expect(await answering(allocation).allocate(req).answer()).toEqual(allocation);
  await expect(
    answering({ ...allocation, generation: 0 })
      .allocate(req)
      .answer(),
  ).rejects.toMatchObject({
    code: Code.DaemonProtocol,
    message: expect.stringContaining('generation'),
  });
});
