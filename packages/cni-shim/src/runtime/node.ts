/**
 * The runtime for Node (tests that run the sources, and the Node build used to exercise this seam):
 * node:child_process for processes, node:http for requests (@ferry/http, the client ferryctl and the tests use too).
 */
import { createHash } from 'node:crypto';
import { requestOverNode } from '@ferry/http/node';
import { nodeRunner } from '@ferry/net/node-runner';
import type { Runtime } from './runtime';

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

export const nodeRuntime: Runtime = { run: nodeRunner, request: requestOverNode, sha256Hex };
