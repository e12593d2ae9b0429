import type { FerrydClient } from './client';

/** What a command gets: its arguments, the client, and where to write. */
export interface Context {
  positionals: string[];
  flags: Record<string, string | boolean | undefined>;
  json: boolean;
  client: FerrydClient;
  /** The unix socket the client talks to. */
  socket: string;
  /** Writes a line to stdout; returns 0 so a command can `return ctx.print(...)`. */
  print(text: string): 0;
  /** Reports a usage error on stderr; returns exit code 2. */
  usage(problem: string): 2;
}
