/**
 * The generated docs are what the code says: docs/configuration.md from the zod schemas, docs/api.md and
 * docs/openapi.json from ferryd's routes. `pnpm run docs` rewrites them (this test with --update).
 */
import { expect, test } from 'vitest';
import { apiReference, openApiDocument } from '../../scripts/docs/api-reference';
import { configurationReference } from '../../scripts/docs/config-reference';

test('docs/configuration.md is generated from the current schemas', async () => {
  await expect(configurationReference()).toMatchFileSnapshot('../../docs/configuration.md');
});

test('docs/api.md and docs/openapi.json are generated from the current routes', async () => {
  const doc = await openApiDocument();
  await expect(apiReference(doc)).toMatchFileSnapshot('../../docs/api.md');
  await expect(`${JSON.stringify(doc, null, 2)}\n`).toMatchFileSnapshot('../../docs/openapi.json');
});
