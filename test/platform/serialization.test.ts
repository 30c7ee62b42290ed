// Response serializers compiled once per schema (src/platform/http/serialization.ts): reused only
// while what they were compiled from is the same, so an answer is never serialized by a stale one.
import { describe, expect, it } from 'vitest';
import { buildSerializer } from '../../src/platform/http/serialization.js';

const route = (schema: unknown, httpStatus = '200') => ({ method: 'GET', url: '/x', httpStatus, schema });
const Shared = (fields: Record<string, unknown>) => ({ $id: 'Shared', type: 'object', properties: fields });
const Answer = { type: 'object', properties: { success: { type: 'boolean' }, shared: { $ref: 'Shared' } } };

describe('buildSerializer', () => {
  it('hands back the serializer of a schema already compiled, in this app and in the next one built', () => {
    const first = buildSerializer({ Shared: Shared({ a: { type: 'string' } }) })(route(Answer));
    const again = buildSerializer({ Shared: Shared({ a: { type: 'string' } }) });
    expect(again(route(Answer, '201'))).toBe(first);
    expect(first({ success: true, shared: { a: 'x', b: 'hidden' } })).toBe('{"success":true,"shared":{"a":"x"}}');
  });

  it('compiles anew for another schema object, for shared schemas that changed, and under options of its own', () => {
    const first = buildSerializer({ Shared: Shared({ a: { type: 'string' } }) })(route(Answer));
    expect(buildSerializer({ Shared: Shared({ a: { type: 'string' } }) })(route({ ...Answer }))).not.toBe(first);
    const changed = buildSerializer({ Shared: Shared({ b: { type: 'string' } }) })(route(Answer));
    expect(changed).not.toBe(first);
    expect(changed({ success: true, shared: { a: 'x', b: 'y' } })).toBe('{"success":true,"shared":{"b":"y"}}');
    expect(buildSerializer({ Shared: Shared({ a: { type: 'string' } }) }, { rounding: 'ceil' })(route(Answer))).not.toBe(first);
  });
});
