// Response serializers, compiled once per schema in a process. Fastify compiles one with
// fast-json-stringify for every response of every route when an app is built: about 1,240 here,
// of only 64 distinct schemas (every route's error answers share theirs), a quarter of a second
// of CPU at each boot and again in every app a process builds (the tests build over a hundred).
// A serializer depends only on its schema and the shared schemas it references (Agent, ErrorBody,
// which Fastify copies into each app), so it is kept per schema object and per content of those,
// as the validators are (src/platform/http/validation.ts: one Ajv per process, caching by schema).
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import canonicalize from 'canonicalize';

type Factory = ReturnType<typeof SerializerSelector>;
type Serializer = (data: unknown) => string;

/** Route schema -> the shared schemas' canonical JSON -> its serializer. */
const compiled = new WeakMap<object, Map<string, Serializer>>();

/** Fastify's `schemaController.compilersFactory.buildSerializer`. */
export const buildSerializer: Factory = (externalSchemas, options) => {
  const compile = SerializerSelector()(externalSchemas, options);
  // Options other than the defaults change the code generated: no reuse then.
  if (options !== undefined && Object.keys(options).length > 0) return compile;
  const external = canonicalize(externalSchemas ?? {}) ?? '';
  return (route) => {
    const schema = route.schema;
    if (typeof schema !== 'object' || schema === null) return compile(route);
    const bySchemas = compiled.get(schema) ?? compiled.set(schema, new Map()).get(schema)!;
    let serialize = bySchemas.get(external);
    if (!serialize) bySchemas.set(external, (serialize = compile(route)));
    return serialize;
  };
};
