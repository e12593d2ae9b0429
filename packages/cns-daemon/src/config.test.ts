import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { loadConfig, parseFlags } from './config';
import { tempDir } from './testing/harness';

const yaml = `
networks:
  - name: ferry
    ipv4: { subnet: 10.244.1.0/24 }
socket: /run/from-file.sock
logLevel: warn
`;

test('YAML file, then FERRY_* environment, then flags, each overriding the one before', (t) => {
  const file = join(tempDir(t), 'ferryd.yaml');
  writeFileSync(file, yaml);
  const fromFile = loadConfig(file, {}, {}).config;
  expect(fromFile.socket).toBe('/run/from-file.sock');
  expect(fromFile.logLevel).toBe('warn');
  expect(fromFile.cooldownSec).toBe(30);

  const env = { FERRY_SOCKET: '/run/from-env.sock', FERRY_LOG_LEVEL: 'debug' };
  expect(loadConfig(file, env, {}).config).toMatchObject({ socket: '/run/from-env.sock', logLevel: 'debug' });

  const flags = parseFlags(['--config', file, '--socket', '/run/from-flag.sock']);
  expect(flags.config).toBe(file);
  expect(loadConfig(file, env, flags.overrides).config).toMatchObject({
    socket: '/run/from-flag.sock',
    logLevel: 'debug',
  });
});

test.for([
  ['not YAML at all: [', /^parse config /],
  ['networks: []', /networks: /],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24 } }, { name: a, ipv4: { subnet: 10.1.0.0/24 } }]',
    /"a" is configured twice/,
  ],
  ['networks: [{ name: a, ipv6: { subnet: 10.0.0.0/24 } }]', /is not an IPv6 subnet/],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24, rangeStart: 10.9.0.1 } }]',
    /rangeStart: "10.9.0.1" is not inside/,
  ],
  ['networks: [{ name: a }]', /needs ipv4, ipv6 or both/],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/16 } }, { name: b, ipv4: { subnet: 10.0.7.0/24 } }]',
    /networks\[1\]\.ipv4\.subnet: "10.0.7.0\/24" overlaps networks\[0\]\.ipv4\.subnet "10.0.0.0\/16"/,
  ],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24, exclude: [10.0.1.5] } }]',
    /exclude\[0\]: "10.0.1.5" is not inside the subnet/,
  ],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24, exclude: ["fd00::1"] } }]',
    /exclude\[0\]: "fd00::1" is not IPv4/,
  ],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24, exclude: [10.0.0.1/24] } }]',
    /exclude\[0\]: "10.0.0.1\/24" has host bits set/,
  ],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24, rangeStart: 10.0.0.8, rangeEnd: 10.0.0.11, exclude: [10.0.0.8/30] } }]',
    /networks\[0\]\.ipv4\.exclude: covers the whole range/,
  ],
  ['networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24 } }]\nbogus: 1', /bogus|Unrecognized/],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24 } }]\ndelegatedDevices: [{ group: g }]',
    /needs mac or namePattern/,
  ],
] as const)('refuses %j naming the problem', ([text, msg], t) => {
  const file = join(tempDir(t), 'ferryd.yaml');
  writeFileSync(file, text);
  expect(() => loadConfig(file, {}, {})).toThrow(msg);
});

test('an unknown flag is an error naming it', () => {
  expect(() => parseFlags(['--sockett', '/x'])).toThrow(/sockett/);
});
