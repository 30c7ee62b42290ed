// Response headers every answer carries (issue 28), through @fastify/helmet: nosniff, a CSP that
// lets a JSON answer load and frame nothing (HTML pages and /docs set their own, each with
// frame-ancestors 'none'), no framing, no referrer; HSTS only on requests that came over https.
// Cache-Control: no-store on authenticated answers is set where the credential is accepted
// (request-context.ts).
import helmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

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
    await app.register(helmet, {
      contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
      // The sign-in popup posts its outcome to window.opener, which same-origin would sever.
      crossOriginOpenerPolicy: false,
      xFrameOptions: { action: 'deny' },
      // HSTS over plain http means nothing to a browser and would mislead: set below, on https only.
      strictTransportSecurity: false,
    });
    // request.protocol follows X-Forwarded-Proto only under TRUST_PROXY.
    app.addHook('onRequest', (request, reply, done) => {
      if (request.protocol === 'https') reply.header('strict-transport-security', HSTS);
      done();
    });
  },
  { name: 'security-headers' },
);
