import { expect, test } from 'vitest';
import { ipArgv, namedNetns } from './netns';

test('a netns under /var/run/netns is entered with ip -n, any other path with nsenter', () => {
  expect(ipArgv({ kind: 'self' }, ['link'])).toEqual(['ip', 'link']);
  expect(ipArgv({ kind: 'path', path: '/var/run/netns/cni-1234' }, ['link'])).toEqual(['ip', '-n', 'cni-1234', 'link']);
  expect(ipArgv({ kind: 'path', path: '/run/netns/cni-1234' }, ['link'])).toEqual(['ip', '-n', 'cni-1234', 'link']);
  expect(ipArgv({ kind: 'path', path: '/proc/42/ns/net' }, ['link'])).toEqual([
    'nsenter',
    '--net=/proc/42/ns/net',
    'ip',
    'link',
  ]);
});

test.for(['/var/run/netns/a/b', '/var/run/netns/', '/var/run/netns/-x', '/var/run/netns/..', '/tmp/netns/x'])(
  '%s is not a named netns',
  (path) => {
    expect(namedNetns(path)).toBeUndefined();
  },
);
