// Schema pieces shared by every domain: the error envelope and the responses each route can give.
import { Type, type Static, type TObject, type TSchema } from 'typebox';

export const ErrorBody = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.String({ description: 'What went wrong, naming the field or state involved' }),
    code: Type.Optional(Type.String({ description: 'A stable machine-readable code' })),
  },
  { $id: 'ErrorBody', title: 'Error' },
);

const errorRef = Type.Ref('ErrorBody');

/** Error responses for a route's schema, e.g. `...errorResponses(400, 401, 409)`. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((status) => [status, errorRef]));
}

/** The statuses every environment-resolved, authenticated route can answer with. */
export const COMMON_ERRORS = [401, 403, 413, 421, 500, 503] as const;

/** A string enum as JSON Schema `enum` (one clear message: "must be one of: a, b"), typed as its union. */
export function stringEnum<const T extends readonly string[]>(values: T, options: { description?: string } = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/** A string or null, with the string constraints applying to strings only. */
export function nullableString(options: { minLength?: number; maxLength?: number; pattern?: string; description?: string } = {}) {
  return Type.Unsafe<string | null>({ type: ['string', 'null'], ...options });
}

/** A timestamp as both drivers render them: ISO-8601 UTC with milliseconds. */
export function timestamp(description?: string) {
  return Type.String({ format: 'date-time', ...(description ? { description } : {}) });
}

/** A timestamp or null (a time that has not happened yet). */
export function nullableTimestamp(description?: string) {
  return Type.Unsafe<string | null>({ type: ['string', 'null'], format: 'date-time', ...(description ? { description } : {}) });
}

/**
 * An object or null, as a JSON Schema type list: the serializer writes it directly, where an
 * `anyOf` union would make it validate the value against each member to choose one.
 */
export function nullableObject<T extends TObject>(schema: T, description?: string) {
  return Type.Unsafe<Static<T> | null>({ ...schema, type: ['object', 'null'], ...(description ? { description } : {}) });
}

/**
 * Where a page starts: bounded so that the validation, never the database (whose `offset` is a
 * bigint but whose drivers refuse what is past an int), answers an absurd value. One bound for
 * every list.
 */
export const MAX_OFFSET = 1_000_000_000;

export function pageOffset(options: { default?: number } = {}) {
  return Type.Integer({ minimum: 0, maximum: MAX_OFFSET, ...options });
}
