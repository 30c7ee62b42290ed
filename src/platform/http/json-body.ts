// The JSON body parser: Fastify's own, except that a body with nothing in it is no body. axios and
// most fetch wrappers send `Content-Type: application/json` with an empty body on a POST that has
// none (`/reports/<id>/viewed`, `/actions/<id>/requeue`); Fastify's parser refuses that as an empty
// JSON body, so the same call answered 400 or 200 by whether the client set the header. Here it
// reaches the route exactly as the request without the header does: a route that takes no body
// runs, and one that declares a body schema refuses the missing body in validation, after every
// gate, as it does without the header (error-handler.ts words it "body is required").
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * JSON's insignificant whitespace (RFC 8259 section 2): a body of only this holds no value, and is
 * taken as no body rather than as invalid JSON (docs/decisions.md). One anchored class: linear.
 */
const NOTHING = /^[ \t\r\n]*$/;

export const jsonBodyPlugin = fp(
  async (app: FastifyInstance) => {
    // The default parser with the instance's own prototype-poisoning settings, for every other body.
    const parseJson = app.getDefaultJsonParser(app.initialConfig.onProtoPoisoning ?? 'error', app.initialConfig.onConstructorPoisoning ?? 'error');
    app.removeContentTypeParser('application/json');
    // parseAs 'string' under the instance's bodyLimit, as the default parser reads (a larger body is 413 unread).
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body: string, done) => {
      if (NOTHING.test(body)) return done(null, undefined);
      parseJson(request, body, done);
    });
  },
  { name: 'json-body' },
);
