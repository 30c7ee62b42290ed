// What is running: the package version (package.json) and the git commit the build was made from
// (dist/build-info.json, written by `npm run build`: scripts/build-info.js). GET /ready and the
// cms_build_info metric carry both, so a rolling upgrade can see which instances run which release.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from './paths.js';

export interface BuildInfo {
  version: string;
  /** The full commit hash, or "unknown" (built outside a git checkout, or not by `npm run build`). */
  commit: string;
}

export const UNKNOWN_COMMIT = 'unknown';

function readJson(path: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Read from the files under `root` (the package root by default). */
export function readBuildInfo(root = PROJECT_ROOT): BuildInfo {
  const version = readJson(join(root, 'package.json'))?.version;
  const commit = readJson(join(root, 'dist', 'build-info.json'))?.commit;
  return {
    version: typeof version === 'string' ? version : 'unknown',
    commit: typeof commit === 'string' && commit.length > 0 ? commit : UNKNOWN_COMMIT,
  };
}

/** The package's licence as package.json states it (`UNLICENSED`: private and proprietary), for the OpenAPI document. */
export function packageLicense(root = PROJECT_ROOT): string | undefined {
  const license = readJson(join(root, 'package.json'))?.license;
  return typeof license === 'string' ? license : undefined;
}

let cached: BuildInfo | undefined;

/** This process's build, read once. */
export function buildInfo(): BuildInfo {
  cached ??= readBuildInfo();
  return cached;
}
