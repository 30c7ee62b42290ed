// Request validation on purpose: bodies are strict (no type coercion, unknown fields refused,
// since the spec wants wrong types and unknown or server-managed fields rejected); query strings,
// params and headers arrive as text, so they are coerced to the declared types.
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsImport from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;

function createAjv(coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
  addFormats(ajv);
  return ajv;
}

const strictAjv = createAjv(false);
const coercingAjv = createAjv('array');

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? strictAjv : coercingAjv).compile(schema);

/** "body.reason is required", "querystring.limit must be <= 500": the first problem, naming the field. */
export function describeValidationError(context: string, problems: Partial<ErrorObject>[]): string {
  const problem = problems[0];
  if (!problem) return `${context} is invalid`;
  const path = (problem.instancePath ?? '')
    .split('/')
    .filter(Boolean)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('');
  const params = (problem.params ?? {}) as Record<string, unknown>;
  switch (problem.keyword) {
    case 'required':
      return `${context}${path}.${String(params.missingProperty)} is required`;
    case 'additionalProperties':
      return `${context}${path}.${String(params.additionalProperty)} is not an accepted field`;
    case 'type':
      return `${context}${path} must be ${([] as unknown[]).concat(params.type).join(' or ')}`;
    case 'pattern':
      // '\\S' is the schemas' way of saying "not only whitespace".
      if (params.pattern === '\\S') return `${context}${path} must not be blank`;
      return `${context}${path} ${problem.message ?? 'is invalid'}`;
    case 'enum':
      return `${context}${path} must be one of: ${(params.allowedValues as unknown[]).join(', ')}`;
    default:
      return `${context}${path} ${problem.message ?? 'is invalid'}`;
  }
}
