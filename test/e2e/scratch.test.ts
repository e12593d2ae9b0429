import { readFileSync } from 'node:fs';
import { test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { runShim } from '../fixtures/shim';

test('scratch', async (t) => {
  const { node, ferryd } = await useNode(t);
  for (let i = 0; i < 3; i++) {
    const pod = await useNetns(t, 'pod');
    const add = await runShim(node, 'ADD', {
      containerId: newContainerId(),
      ifName: 'eth0',
      netns: pod,
      conf: netConf(ferryd),
    });
    console.log(add.ms);
  }
  for (const l of readFileSync(`${ferryd.dir}/cni.log`, 'utf8').trim().split('\n').slice(-11)) {
    const j = JSON.parse(l);
    console.log('LOG', j.ms, j.msg, j.path ?? '', j.status ?? '', j.tookMs ?? '');
  }
});
