// Input the database cannot store is refused here, once for every route, before validation:
// PostgreSQL text holds no NUL character and its jsonb no lone UTF-16 surrogate ("unsupported
// Unicode escape sequence"), and free-form JSON (a chat profile, report data) nested without bound
// would cost a stack frame per level wherever it is walked. Every string of the body, query string
// and path parameters is checked, keys of free-form objects included; JSON and form bodies alike.
import type { FastifyRequest } from 'fastify';
import { errors } from '../errors.js';

/** Levels of nesting a body may have: the body object itself is level 1 (docs/decisions.md). */
export const MAX_JSON_DEPTH = 32;

// In a unicode regex a well-formed surrogate pair is one code point, so \p{Cs} matches lone halves only.
const UNSTORABLE = /[\0\p{Cs}]/u;
const UNSTORABLE_PROBLEM = 'must not contain NUL characters or unpaired surrogates';

/** "body.profile.x", "body.items[2]": the validation messages' way of naming a field. */
const childPath = (path: string, key: string | number) => (typeof key === 'number' ? `${path}[${key}]` : `${path}.${key}`);

/**
 * The first problem of one request part, or undefined. Iterative, so a hostile depth cannot
 * exhaust the stack before it is measured.
 */
export function findUnstorableInput(part: string, value: unknown): string | undefined {
  const pending: { value: unknown; path: string; depth: number }[] = [{ value, path: part, depth: 0 }];
  while (pending.length > 0) {
    const item = pending.pop()!;
    if (typeof item.value === 'string') {
      if (UNSTORABLE.test(item.value)) return `${item.path} ${UNSTORABLE_PROBLEM}`;
      continue;
    }
    if (typeof item.value !== 'object' || item.value === null) continue;
    const depth = item.depth + 1;
    if (depth > MAX_JSON_DEPTH) return `${part} is nested more than ${MAX_JSON_DEPTH} levels deep`;
    if (Array.isArray(item.value)) {
      for (let i = item.value.length - 1; i >= 0; i--) pending.push({ value: item.value[i], path: childPath(item.path, i), depth });
      continue;
    }
    const keys = Object.keys(item.value);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      // A bad key is named by its parent: the key itself cannot be shown safely.
      if (UNSTORABLE.test(key)) return `${item.path} field names ${UNSTORABLE_PROBLEM}`;
      pending.push({ value: (item.value as Record<string, unknown>)[key], path: childPath(item.path, key), depth });
    }
  }
  return undefined;
}

/** preValidation hook of the API context: 400 VALIDATION_ERROR naming the first offending field. */
export async function refuseUnstorableInput(request: FastifyRequest): Promise<void> {
  const problem =
    findUnstorableInput('params', request.params) ??
    findUnstorableInput('querystring', request.query) ??
    findUnstorableInput('body', request.body);
  if (problem !== undefined) throw errors.validation(problem);
}
