import { expect, test } from 'vitest';
import { FdbBatch, IpBatch, quoteBatchWord } from './batch';

test('typed methods build the command lines', () => {
  const b = new IpBatch()
    .addVeth({ name: 'fry1', mac: 'ee:ee:ee:ee:ee:ee', mtu: 1450, peer: { name: 'eth0', netns: '/var/run/netns/p' } })
    .addRoute({ dst: '10.0.0.5/32', dev: 'fry1', scope: 'link' })
    .addAddress('eth0', 'fd00::5/128', { nodad: true })
    .setUp('fry1', { alias: 'ferry:gen=3 net=ferry' })
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
    // The alias goes in the request that sets the link up (one word: quoted in a batch).
    { args: ['link', 'set', 'dev', 'fry1', 'up', 'alias', 'ferry:gen=3 net=ferry'], json: false },
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

test('owned routes carry their protocol; deletions name it, so only an owned route can match', () => {
  const b = new IpBatch()
    .replaceRoute({ dst: '10.244.2.0/24', via: '10.244.2.0', dev: 'ferry.1', onlink: true, proto: 117 })
    .replaceRoute({ dst: 'fd00:10:244:3::/64', via: '2001:db8::13', proto: 117 })
    .deleteRoute('10.244.4.0/24', 117)
    .addVxlan({ name: 'ferry.1', vni: 1, port: 8472, mac: '0e:00:00:00:00:01', mtu: 1450, local: '192.0.2.11' });
  expect(b.lines.map((l) => l.args.join(' '))).toEqual([
    'route replace 10.244.2.0/24 via 10.244.2.0 dev ferry.1 onlink proto 117',
    'route replace fd00:10:244:3::/64 via 2001:db8::13 proto 117',
    'route del 10.244.4.0/24 proto 117 table main',
    'link add ferry.1 address 0e:00:00:00:00:01 mtu 1450 type vxlan id 1 dstport 8472 local 192.0.2.11 nolearning',
  ]);
  const fdb = new FdbBatch()
    .replace('0e:00:00:00:00:02', 'ferry.1', '192.0.2.12')
    .delete('0e:00:00:00:00:03', 'ferry.1', '192.0.2.13');
  expect(fdb.tool).toBe('bridge');
  expect(fdb.lines.map((l) => l.args.join(' '))).toEqual([
    'fdb replace 0e:00:00:00:00:02 dev ferry.1 dst 192.0.2.12 self permanent',
    'fdb del 0e:00:00:00:00:03 dev ferry.1 dst 192.0.2.13 self',
  ]);
});
