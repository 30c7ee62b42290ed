// The answers a client got, checked against what /openapi.json promised for them: each status must
// be declared for its operation, and each body must validate against that response's schema
// (JSON Schema 2020-12, as OpenAPI 3.1 has it). Fastify serializes answers through the same schemas
// but does not check them (enums, formats, a member of anyOf), so this is where an answer that the
// generated types would reject shows up.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';

const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;

export interface Exchange {
  method: string;
  path: string;
  status: number;
  body: string;
}

interface ResponseObject {
  content?: Record<string, { schema: object }>;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>;
}

/**
 * Records every exchange with `origin` made through the global fetch until `stop()` (a client
 * created meanwhile takes the recording fetch: openapi-fetch reads `globalThis.fetch` in createClient).
 */
export function recordExchanges(origin: string): { exchanges: Exchange[]; stop(): void } {
  const original = globalThis.fetch;
  const exchanges: Exchange[] = [];
  globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    const response = await original(request);
    const url = new URL(request.url);
    if (url.origin === origin) {
      exchanges.push({ method: request.method, path: url.pathname, status: response.status, body: await response.clone().text() });
    }
    return response;
  };
  return { exchanges, stop: () => void (globalThis.fetch = original) };
}

/** The document's path template a request path matches, literal segments before parameters. */
function templateOf(doc: OpenApiDocument, method: string, path: string): string | undefined {
  const candidates = Object.keys(doc.paths)
    .filter((template) => doc.paths[template]![method] !== undefined)
    .filter((template) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path));
  return candidates.sort((a, b) => a.split('{').length - b.split('{').length)[0];
}

/** A JSON pointer as a URI fragment: `~` and `/` escaped, then `{}` and the rest percent-encoded. */
const pointer = (...parts: string[]) => parts.map((p) => encodeURIComponent(p.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/');

/** What is wrong with each exchange the document does not describe; empty when all match. */
export function mismatches(doc: OpenApiDocument, exchanges: Exchange[]): string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi');
  const problems: string[] = [];
  for (const { method, path, status, body } of exchanges) {
    const label = `${method} ${path} ${status}`;
    const template = templateOf(doc, method.toLowerCase(), path);
    if (template === undefined) {
      problems.push(`${label}: no operation in the document`);
      continue;
    }
    const declared = doc.paths[template]![method.toLowerCase()]!.responses[String(status)];
    if (declared === undefined) {
      problems.push(`${label}: status not declared for ${method} ${template}`);
    } else if (declared.content?.['application/json'] === undefined) {
      if (body !== '') problems.push(`${label}: a body where none is declared`);
    } else {
      const ref = `openapi#/${pointer('paths', template, method.toLowerCase(), 'responses', String(status), 'content', 'application/json', 'schema')}`;
      const validate = ajv.getSchema(ref)!;
      if (!validate(JSON.parse(body))) problems.push(`${label}: ${ajv.errorsText(validate.errors)}`);
    }
  }
  return problems;
}
