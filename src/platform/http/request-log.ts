// What a log line may say about a request. URLs are logged (Fastify's `incoming request` at info,
// the error handler's context), and the OAuth callback's `code` and `state` are credentials while
// they live: their values are replaced wherever they appear in a query string, whatever the route.
import type { FastifyRequest } from 'fastify';

const SECRET_PARAMETERS = new Set(['code', 'state']);
export const REDACTED = '[redacted]';

function parameterName(raw: string): string {
  try {
    // Fastify's query parser decodes names (`%63ode` is `code`, `+` a space): so does this check.
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

/** The URL with the values of `code` and `state` in its query string replaced by [redacted]. */
export function redactUrl(url: string): string {
  const query = url.indexOf('?');
  if (query < 0) return url;
  const parts = url.slice(query + 1).split('&').map((part) => {
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    return SECRET_PARAMETERS.has(parameterName(name)) ? `${name}=${REDACTED}` : part;
  });
  return `${url.slice(0, query + 1)}${parts.join('&')}`;
}

/** Fastify's own `req` serializer, with the URL redacted. */
export function serializeRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    version: request.headers?.['accept-version'],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
