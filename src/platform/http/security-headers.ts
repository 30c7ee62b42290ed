// Response headers every answer carries (issue 28): nosniff, a CSP that lets a JSON answer load and
// frame nothing (HTML pages and /docs set their own, each with frame-ancestors 'none'), no framing,
// no referrer; HSTS only on requests that came over https. Cache-Control: no-store on
// authenticated answers is set where the credential is accepted (request-context.ts).
//
// They are what @fastify/helmet wrote with these options (the rest of helmet's defaults, less
// Cross-Origin-Opener-Policy and HSTS), written here as constants: the plugin built helmet's
// middleware again on every request, parsing the CSP each time, about a tenth of a light request's
// CPU (issue 38: GET /reports/<id> for the bot's key at 0.80 of the build before them).
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Set on the raw response, as helmet set them: an error answer keeps them, a route's own header (a
 * CSP) replaces its. No Cross-Origin-Opener-Policy: the sign-in popup posts its outcome to
 * window.opener, which same-origin would sever.
 */
const HEADERS: readonly (readonly [string, string])[] = [
  ['content-security-policy', "default-src 'none';frame-ancestors 'none'"],
  ['cross-origin-resource-policy', 'same-origin'],
  ['origin-agent-cluster', '?1'],
  ['referrer-policy', 'no-referrer'],
  ['x-content-type-options', 'nosniff'],
  ['x-dns-prefetch-control', 'off'],
  ['x-download-options', 'noopen'],
  ['x-frame-options', 'DENY'],
  ['x-permitted-cross-domain-policies', 'none'],
  ['x-xss-protection', '0'],
];

/** HSTS as helmet writes it by default: a year, subdomains included. */
const HSTS = 'max-age=31536000; includeSubDomains';

/**
 * /docs (swagger-ui): its scripts, styles and fonts are files of its own ('self'), its icons data:
 * URLs, and "Try it out" calls this origin. swagger-ui's own policy less `upgrade-insecure-requests`
 * (which would send http://localhost's assets to https) and with frame-ancestors 'none'.
 */
export const DOCS_CSP =
  "default-src 'self'; base-uri 'self'; connect-src 'self'; font-src 'self' data:; form-action 'self'; frame-ancestors 'none'; " +
  "img-src 'self' data:; object-src 'none'; script-src 'self'; script-src-attr 'none'; style-src 'self'";

export const securityHeadersPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', (request, reply, done) => {
      for (const [name, value] of HEADERS) reply.raw.setHeader(name, value);
      // HSTS over plain http means nothing to a browser and would mislead. request.protocol follows
      // X-Forwarded-Proto only under TRUST_PROXY.
      if (request.protocol === 'https') reply.header('strict-transport-security', HSTS);
      done();
    });
  },
  { name: 'security-headers' },
);
