import { Type, type Static } from 'typebox';

const returnTo = Type.String({
  maxLength: 2048,
  description: 'Where the browser goes after sign-in: an http(s) URL on an allowed dashboard or training origin',
  examples: ['https://dashboard.example.org/reports'],
});

export const LocalPageQuery = Type.Object({ return_to: Type.Optional(returnTo) }, { additionalProperties: false });
export type LocalPageQuery = Static<typeof LocalPageQuery>;

export const LocalSignInBody = Type.Object(
  {
    chat_id: Type.String({ pattern: '^[0-9]{1,20}$', description: 'One of the fictional demo agents GET /auth/local lists', examples: ['100000000000000003'] }),
    return_to: Type.Optional(returnTo),
  },
  { additionalProperties: false },
);
export type LocalSignInBody = Static<typeof LocalSignInBody>;

export const LocalPage = {
  description: 'An HTML page listing the fictional demo agents, each with a sign-in button (a form posting to POST /auth/local)',
  content: { 'text/html': { schema: Type.String() } },
};
