// The OpenAPI document is generated from the route schemas: /openapi.json, and an interactive
// reference at /docs. Each operation's security follows the route's declared `config.auth`; its
// operationId is declared beside the route (a generated client's method name: renaming one breaks
// those clients, test/openapi-document.test.ts). `npm run lint:openapi` lints the document.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyContextConfig, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { buildInfo, packageLicense } from '../build-info.js';
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
    const license = packageLicense();
    app.addHook('onRoute', (route) => {
      const config = route.config as FastifyContextConfig | undefined;
      const auth = config?.auth;
      if (auth && route.schema && !route.schema.hide) {
        const schema = route.schema as Record<string, unknown>;
        schema.security = SECURITY[auth];
        // The declared access as data, for client authors and for the tests that derive every
        // refusal from it (test/refusal-matrix.test.ts); the route config is the one source.
        const report = typeof config.report === 'function' ? config.report({}) : config.report;
        schema['x-access'] = Object.fromEntries(
          Object.entries({ auth, permission: config.permission, admin: config.admin, rank: config.rank, trainer: config.trainer, member: config.member, report }).filter(([, v]) => v !== undefined),
        );
      }
    });
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: `${serviceName} API`,
          // The release, as GET /ready reports it; the licence as package.json states it.
          version: buildInfo().version,
          ...(license === undefined ? {} : { license: { name: license } }),
          description:
            'Case management for moderation organisations. Requests resolve to the production or demo ' +
            'environment by Host header. Errors: {success:false, error, code?}.',
        },
        // The service's own origin, whichever host (and so environment) the document was read from.
        servers: [{ url: '/' }],
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
