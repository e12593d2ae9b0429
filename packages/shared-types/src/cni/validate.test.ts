import { describe, expect, test } from 'vitest';
import { ContainerIdSchema, IfNameSchema, NetworkNameSchema } from './names';
import { containerIdProblem, ifNameProblem, networkNameProblem } from './validate';

describe('container ID', () => {
  test.for(['a', '0', 'abc123', 'a_b.c-d', 'f'.repeat(64), 'x'.repeat(255)])('accepts %s', (id) => {
    expect(containerIdProblem(id)).toBeUndefined();
    expect(ContainerIdSchema.safeParse(id).success).toBe(true);
  });
  test.for([
    ['', 'is empty'],
    ['-abc', 'must match'],
    ['_abc', 'must match'],
    ['.abc', 'must match'],
    ['a/b', 'must match'],
    ['../etc', 'must match'],
    ['a b', 'must match'],
    ['a:b', 'must match'],
    ['é', 'must match'],
    ['x'.repeat(256), 'longer than 255'],
  ] as const)('rejects %j (%s)', ([id, why]) => {
    expect(containerIdProblem(id)).toContain(why);
    expect(ContainerIdSchema.safeParse(id).error?.issues[0]?.message).toBe(containerIdProblem(id));
  });
});

describe('ifName', () => {
  test.for(['eth0', 'net1', 'a', 'x'.repeat(15), 'eth0.100', '...', 'a\u0001b'])('accepts %j', (name) => {
    expect(ifNameProblem(name)).toBeUndefined();
    expect(IfNameSchema.safeParse(name).success).toBe(true);
  });
  test.for([
    ['', 'is empty'],
    ['x'.repeat(16), 'longer than 15 bytes'],
    // IFNAMSIZ counts bytes: in ASCII they are characters (14 characters here, 18 bytes).
    ['éééé'.padEnd(14, 'x'), 'must be ASCII'],
    ['veth-é', 'must be ASCII'],
    ['.', 'cannot be "."'],
    ['..', 'cannot be ".."'],
    ['a/b', 'cannot contain'],
    ['a:b', 'cannot contain'],
    ['a b', 'cannot contain'],
    ['a\tb', 'cannot contain'],
    ['a\nb', 'cannot contain'],
  ] as const)('rejects %j (%s)', ([name, why]) => {
    expect(ifNameProblem(name)).toContain(why);
    // The schema reports the same problem first.
    expect(IfNameSchema.safeParse(name).error?.issues[0]?.message).toBe(ifNameProblem(name));
  });
});

describe('network name', () => {
  test.for(['ferry', 'k8s-pod-network', 'a.b_c'])('accepts %s', (name) => {
    expect(networkNameProblem(name)).toBeUndefined();
    expect(NetworkNameSchema.safeParse(name).success).toBe(true);
  });
  test.for(['', '../x', 'a/b', '/abs', '.hidden', 'a b', 'net\0'])('rejects %j', (name) => {
    expect(networkNameProblem(name)).toBeDefined();
    expect(NetworkNameSchema.safeParse(name).success).toBe(false);
  });
});
