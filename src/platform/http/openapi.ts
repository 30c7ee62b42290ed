// The OpenAPI document is generated from the route schemas: /openapi.json, and an interactive
// reference at /docs. Each operation's security follows the route's declared `config.auth`.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ErrorBody } from './schemas.js';
import { DOCS_CSP } from './security-headers.js';

const SECURITY = {
  key: [{ apiKey: [] }],
  session: [{ session: [] }],
  either: [{ apiKey: [] }, { session: [] }],
  none: [],
} as const;

export const openApiPlugin = fp(
  async (app: FastifyInstance, { serviceName }: { serviceName: string }) => {
    app.addSchema(ErrorBody);
    app.addHook('onRoute', (route) => {
      const auth = (route.config as { auth?: keyof typeof SECURITY } | undefined)?.auth;
      if (auth && route.schema && !route.schema.hide) {
        (route.schema as Record<string, unknown>).security = SECURITY[auth];
      }
    });
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: `${serviceName} API`,
          version: '1',
          description:
            'Case management for moderation organisations. Requests resolve to the production or demo ' +
            'environment by Host header. Errors: {success:false, error, code?}.',
        },
        components: {
          securitySchemes: {
            apiKey: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'The environment API key, the whole header, no Bearer prefix' },
            session: { type: 'apiKey', in: 'cookie', name: 'cms_session', description: 'Browser session after chat-platform sign-in' },
          },
        },
      },
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    });
    await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list', deepLinking: true }, staticCSP: DOCS_CSP });
    app.get('/openapi.json', { config: { auth: 'none' }, schema: { hide: true } }, async () => app.swagger());
  },
  { name: 'openapi' },
);
