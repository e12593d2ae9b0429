import { expect, test } from 'vitest';
import { IpBatch, quoteBatchWord } from './batch';

test('typed methods build the command lines', () => {
  const b = new IpBatch()
    .addVeth({ name: 'fry1', mac: 'ee:ee:ee:ee:ee:ee', mtu: 1450, peer: { name: 'eth0', netns: '/var/run/netns/p' } })
    .addRoute({ dst: '10.0.0.5/32', dev: 'fry1', scope: 'link' })
    .addAddress('eth0', 'fd00::5/128', { nodad: true })
    .showLink('eth0');
  expect(b.lines).toEqual([
    {
      args: [
        'link',
        'add',
        'fry1',
        'address',
        'ee:ee:ee:ee:ee:ee',
        'mtu',
        '1450',
        'type',
        'veth',
        'peer',
        'name',
        'eth0',
        'netns',
        '/var/run/netns/p',
      ],
      json: false,
    },
    { args: ['route', 'add', '10.0.0.5/32', 'dev', 'fry1', 'scope', 'link'], json: false },
    { args: ['addr', 'add', 'fd00::5/128', 'dev', 'eth0', 'nodad'], json: false },
    { args: ['link', 'show', 'dev', 'eth0'], json: true },
  ]);
});

test('words that ip -batch cannot carry are refused, the rest quoted', () => {
  expect(quoteBatchWord('eth0')).toBe('eth0');
  expect(quoteBatchWord('a b')).toBe('"a b"');
  expect(quoteBatchWord('say "hi"')).toBe(`'say "hi"'`);
  expect(quoteBatchWord('')).toBe('""');
  expect(quoteBatchWord('eth#0')).toBeUndefined();
  expect(quoteBatchWord(`it's "x"`)).toBeUndefined();
  expect(quoteBatchWord('a\nb')).toBeUndefined();
});
