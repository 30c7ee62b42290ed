// Parsers of the value shapes several variables share: comma lists, http(s) URLs, bare origins,
// booleans and choices. Each throws a message that the reader reports beside the variable's name.

export function parseList<T>(raw: string, parseItem: (item: string) => T): T[] {
  const items = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (items.length === 0) throw new Error('expected a comma-separated list');
  return items.map(parseItem);
}

function parseUrl(raw: string, protocols: string[], what: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`expected ${what}`);
  }
  if (!protocols.includes(url.protocol)) throw new Error(`expected ${what}`);
  return url;
}

export function parseHttpUrl(raw: string): string {
  return parseUrl(raw, ['http:', 'https:'], 'an http(s) URL').toString().replace(/\/$/, '');
}

export function parseOrigin(raw: string): string {
  const url = parseUrl(raw, ['http:', 'https:'], 'an origin such as https://dashboard.example.org');
  if (url.pathname !== '/' || url.search || url.hash || url.username) {
    throw new Error(`"${raw}" is not a bare origin (scheme://host[:port])`);
  }
  return url.origin;
}

export function parseBoolean(raw: string): boolean {
  if (raw !== 'true' && raw !== 'false') throw new Error('expected true or false');
  return raw === 'true';
}

export function oneOf(value: string, allowed: string[]): string {
  if (!allowed.includes(value)) throw new Error(`expected one of ${allowed.join(', ')}`);
  return value;
}
