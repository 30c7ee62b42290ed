// The erasure's text rules (src/admin/subjects/scrub.ts; issue 39, finding 8): a person's names and
// words, and their chat id, are replaced where they are whole words, never inside another word or
// number, in any script; a term ending in punctuation ends there. Pure functions: no store.
import { describe, expect, it } from 'vitest';
import { namesSubject, scrubText, type Subject } from '../src/admin/subjects/scrub.js';
import { ERASURE_MARKER as X } from '../src/platform/audit-chain/personal-fields.js';

const subject = (terms: string[], chatId = '123456789012345678'): Subject => ({ chatId, pseudonym: '01234567890123456789', terms });

describe('scrubText and namesSubject: whole words only', () => {
  const cases: [string[], string, string][] = [
    [['Sam'], 'Samantha Staff', 'Samantha Staff'],
    [['Sam'], 'Sam said hi to Samantha', `${X} said hi to Samantha`],
    [['spam'], 'spamming again; spam!', `spamming again; ${X}!`],
    [['spam'], 'anti_spam spam_bot spam', `anti_spam spam_bot ${X}`],
    [['Łukasz'], 'Łukaszowi i Łukasz.', `Łukaszowi i ${X}.`],
    [['spam!!'], 'spam!!? spam!!x', `${X}? ${X}x`],
    [['Al'], 'Al', X],
    [['Al'], 'Al said Also', 'Al said Also'],
  ];
  for (const [terms, value, expected] of cases) {
    it(`${JSON.stringify(terms)} in ${JSON.stringify(value)}`, () => {
      expect(scrubText(value, subject(terms))).toBe(expected);
      expect(namesSubject(value, subject(terms))).toBe(expected !== value);
    });
  }

  it('a chat id as a whole number only, never inside a longer one', () => {
    const s = subject([], '4242');
    expect(scrubText('ids 4242, 14242 and 42420; url/4242/x', s)).toBe(`ids ${s.pseudonym}, 14242 and 42420; url/${s.pseudonym}/x`);
    expect(namesSubject('14242', s)).toBe(false);
    expect(namesSubject('<@4242>', s)).toBe(true);
  });
});
