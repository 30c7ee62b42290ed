import { Type, type Static } from 'typebox';
export const GeneratedId = Type.Object({
  success: Type.Literal(true),
  id: Type.String({ examples: ['SVC-CASE-04217'] }),
});

export const TimestampBody = Type.Object(
  {
    date: Type.String({
      maxLength: 200,
      description: 'A JavaScript Date string conversion with GMT offset and zone name',
      examples: ['Sat Nov 21 2026 11:04:39 GMT+0100 (Central European Standard Time)'],
    }),
  },
  { additionalProperties: false },
);
export type TimestampBody = Static<typeof TimestampBody>;

export const TimestampResult = Type.Object({
  success: Type.Literal(true),
  timestamp: Type.Integer({ description: 'Unix seconds, as the chat platform\'s <t:…> markup takes them' }),
});
