import { expect, test } from 'vitest';
import { openLog } from './log';
import { Rollback } from './rollback';

test('unwind runs undos in reverse, survives a failing one, and commit disarms it', async () => {
  const log = openLog('/dev/null', 'silent');
  const order: string[] = [];
  const undo = new Rollback();
  undo.push('a', async () => order.push('a'));
  undo.push('b', async () => {
    throw new Error('b failed');
  });
  undo.push('c', async () => order.push('c'));
  await undo.unwind(log);
  expect(order).toEqual(['c', 'a']);
  await undo.unwind(log);
  expect(order).toEqual(['c', 'a']);

  const armed = new Rollback();
  armed.push('x', async () => order.push('x'));
  armed.commit();
  await armed.unwind(log);
  expect(order).toEqual(['c', 'a']);
});

test('steps pushed after an unwind are armed anew, and only they are undone next time', async () => {
  const log = openLog('/dev/null', 'silent');
  const order: string[] = [];
  const undo = new Rollback();
  undo.push('early pair', async () => order.push('early pair'));
  await undo.unwind(log);
  undo.push('release', async () => order.push('release'));
  await undo.unwind(log);
  expect(order).toEqual(['early pair', 'release']);
});
