import { expect, test } from 'vitest';
import { DEFAULT_COMMIT_JOURNAL, defaultCommitJournalOf } from './defaults';

test('the commit journal defaults to a sibling of the delete queue', () => {
  expect(DEFAULT_COMMIT_JOURNAL).toBe('/var/lib/ferry/commit-journal');
  expect(defaultCommitJournalOf('/srv/ferry/queue/')).toBe('/srv/ferry/commit-journal');
  expect(defaultCommitJournalOf('/queue')).toBe('/commit-journal');
  expect(defaultCommitJournalOf('/srv//ferry//queue//')).toBe('/srv//ferry//commit-journal');
  expect(defaultCommitJournalOf('/')).toBe('/commit-journal');
});
