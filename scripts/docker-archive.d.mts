export function sha256OfFile(path: string): Promise<string>;
export function writeDockerArchive(opts: {
  layer: string;
  out: string;
  ref: string;
  config: { Entrypoint?: string[]; Cmd?: string[]; Env?: string[]; Labels?: Record<string, string> };
  createdSec?: number;
  createdBy?: string;
}): Promise<{ imageId: string; diffId: string }>;
