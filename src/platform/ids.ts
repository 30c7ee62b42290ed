// Identifier generators (spec: Identifier formats). `#` is a digit drawn from a cryptographic
// random source; every other character is literal (the X of the join id included).
import { randomInt } from 'node:crypto';

export const ID_FORMATS = {
  agreement: 'AGM-#####',
  agent: 'SVC-AG-#####',
  join: 'SC-###X#',
  case: 'SVC-CASE-#####',
  investigation: 'INV-#####',
  clearance: 'CL-###',
} as const;

export type IdKind = keyof typeof ID_FORMATS;
export const ID_KINDS = Object.keys(ID_FORMATS) as IdKind[];

export function generateId(kind: IdKind): string {
  return fillPattern(ID_FORMATS[kind]);
}

export function fillPattern(pattern: string): string {
  return pattern.replace(/#/g, () => String(randomInt(10)));
}

/** A regular expression matching exactly the strings a pattern generates. */
export function patternRegExp(pattern: string): RegExp {
  const escaped = pattern.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&').replace(/#/g, '\\d');
  return new RegExp(`^${escaped}$`);
}
