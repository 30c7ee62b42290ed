// The personal fields of a sealed row (issue 32): the vocabulary both the chain and subject
// erasure use. Pure functions, no database.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  ERASURE_MARKER, isChatIdKey, isErasedValue, isPersonalKey, isPseudonym, parsePointer, personalLeafAt, personalLeaves, PERSONAL_KEYS, pseudonym, pseudonymKey,
} from '../src/platform/audit-chain/personal-fields.js';

describe('pseudonym', () => {
  const key = pseudonymKey('a server-side secret');

  it("is '0' and 19 digits, from the HMAC's first 8 bytes modulo 10^19", () => {
    const p = pseudonym(key, '123456789012345678');
    expect(p).toMatch(/^0[0-9]{19}$/);
    expect(p).toMatch(/^[0-9]{1,20}$/);
    const n = createHmac('sha256', key).update('123456789012345678').digest().readBigUInt64BE(0) % 10n ** 19n;
    expect(p).toBe('0' + n.toString().padStart(19, '0'));
  });

  it('is stable for one key and chat id, and differs across chat ids and keys', () => {
    expect(pseudonym(key, '42')).toBe(pseudonym(key, '42'));
    expect(pseudonym(key, '42')).not.toBe(pseudonym(key, '43'));
    expect(pseudonym(pseudonymKey('another secret'), '42')).not.toBe(pseudonym(key, '42'));
  });

  it('the key is HMAC(secret, "subject-pseudonym")', () => {
    expect(pseudonymKey('s').equals(createHmac('sha256', 's').update('subject-pseudonym').digest())).toBe(true);
  });

  it('isPseudonym accepts only the pseudonym form, never a real chat id', () => {
    expect(isPseudonym(pseudonym(key, '1'))).toBe(true);
    expect(isPseudonym('123456789012345678')).toBe(false);
    expect(isPseudonym('01234')).toBe(false);
    expect(isPseudonym('012345678901234567890')).toBe(false);
    expect(isPseudonym('0123456789012345678x')).toBe(false);
  });
});

describe('personal keys', () => {
  it('cover chat ids, names and free text, not what the organisation decided', () => {
    for (const k of ['reporter', 'reported', 'actor_name', 'notes', 'body', 'submitted_by_name', 'event', 'target']) expect(isPersonalKey(k)).toBe(true);
    for (const k of ['status', 'duration', 'expires_at', 'report_id', 'punishment_id', 'agent_rank', 'type']) expect(isPersonalKey(k)).toBe(false);
    expect(new Set(PERSONAL_KEYS).size).toBe(PERSONAL_KEYS.length);
  });

  it('an erased value is the marker, or a pseudonym under a chat-id key only', () => {
    const p = pseudonym(pseudonymKey('s'), '7');
    expect(isChatIdKey('reporter')).toBe(true);
    expect(isErasedValue('reporter', p)).toBe(true);
    expect(isErasedValue('reporter', ERASURE_MARKER)).toBe(true);
    expect(isErasedValue('reporter_name', p)).toBe(false);
    expect(isErasedValue('reporter_name', ERASURE_MARKER)).toBe(true);
    expect(isErasedValue('reporter_name', 'Someone else')).toBe(false);
    expect(isErasedValue('reporter_name', null)).toBe(false);
  });
});

describe('personal leaves of a sealed row', () => {
  const event = {
    id: 5, type: 'report.deleted', actor_kind: 'agent', actor_chat_id: '111', actor_name: 'Agent A', report_id: 'R-1',
    before: { reporter: '222', reported: '333', status: 'Open', 'a/b': { note: 'x~y' }, notes_list: [{ note: 'first', author_chat_id: '111', id: 9 }], tags: null },
    after: null, data: { reason: 'spam', duration: '7d' }, correlation_id: 'c-1', created_at: '2026-01-01T00:00:00Z',
  };

  it('lists the personal top-level columns and the string leaves under personal keys, as JSON pointers', () => {
    const form2 = [
      { pointer: '/actor_chat_id', key: 'actor_chat_id', value: '111' },
      { pointer: '/actor_name', key: 'actor_name', value: 'Agent A' },
      { pointer: '/before/reporter', key: 'reporter', value: '222' },
      { pointer: '/before/reported', key: 'reported', value: '333' },
      { pointer: '/before/a~1b/note', key: 'note', value: 'x~y' },
      { pointer: '/before/notes_list/0/note', key: 'note', value: 'first' },
      { pointer: '/before/notes_list/0/author_chat_id', key: 'author_chat_id', value: '111' },
      { pointer: '/data/reason', key: 'reason', value: 'spam' },
    ];
    expect(personalLeaves('events', event, 2)).toEqual(form2);
    // Form 3 (the sealer's): staff acting in their role, the actor and a note's author, are not personal leaves.
    expect(personalLeaves('events', event)).toEqual(form2.filter((l) => !['actor_chat_id', 'actor_name', 'author_chat_id'].includes(l.key)));
    expect(parsePointer('/before/a~1b/note')).toEqual(['before', 'a/b', 'note']);
  });

  it("audit_log's target and reason are personal columns; its other columns are not", () => {
    const row = { id: 1, actor_kind: 'agent', actor_chat_id: '1', action: 'agent.updated', target: '2', reason: 'why', before: { name: 'Old' }, after: { name: 'New' }, correlation_id: 'c' };
    expect(personalLeaves('audit_log', row, 2).map((l) => l.pointer)).toEqual(['/actor_chat_id', '/target', '/reason', '/before/name', '/after/name']);
    expect(personalLeaves('audit_log', row).map((l) => l.pointer)).toEqual(['/target', '/reason', '/before/name', '/after/name']);
    expect(personalLeafAt('audit_log', row, '/action')).toBeUndefined();
    expect(personalLeafAt('audit_log', row, '/after/name')).toEqual({ pointer: '/after/name', key: 'name', value: 'New' });
  });

  it('array elements take their array key', () => {
    const row = { before: null, after: { evidence: ['a', 'b'], kinds: ['ban'] }, data: null };
    expect(personalLeaves('events', row).map((l) => l.pointer)).toEqual(['/after/evidence/0', '/after/evidence/1']);
  });
});
