import { Type, type Static } from 'typebox';

export const LoginQuery = Type.Object(
  {
    popup: Type.Optional(Type.String({ maxLength: 8, description: '1 for the popup flow: the callback answers a page that posts the outcome to window.opener', examples: ['1'] })),
    return_to: Type.Optional(
      Type.String({
        maxLength: 2048,
        description: 'Where the browser goes after sign-in: an http(s) URL on an allowed dashboard or training origin',
        examples: ['https://dashboard.example.org/reports'],
      }),
    ),
  },
  { additionalProperties: false },
);
export type LoginQuery = Static<typeof LoginQuery>;

// The chat platform's redirect: code and state, or error (and error_description) on denial.
// Unknown parameters are tolerated; a malformed query is a sign-in failure, never a JSON error.
export const CallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String({ description: 'The authorization code' })),
    state: Type.Optional(Type.String({ description: 'The state minted by /auth/chat/login' })),
    error: Type.Optional(Type.String({ description: 'Set by the chat platform on denial, e.g. access_denied' })),
    error_description: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);
export type CallbackQuery = Static<typeof CallbackQuery>;

// `headers` is for the document alone: @fastify/swagger makes it the response's `headers` (the
// Location a redirect carries); Fastify neither checks nor serializes response headers.
export const RedirectResponse = Type.Null({
  description: 'Redirect (Location header); no body',
  headers: { Location: Type.String({ description: 'Where the browser goes next' }) },
});

export const PopupPage = {
  description: 'Popup flow: an HTML page that posts {type:"chat-auth", success, error?} to window.opener and closes',
  content: { 'text/html': { schema: Type.String() } },
};
