// A strict reader of the Prometheus text exposition format (version 0.0.4), for the metrics tests:
// it tokenises every line (label values with their escapes, numbers including +Inf and NaN) and
// throws on anything a Prometheus server would refuse: a sample before its TYPE, a family declared
// twice or split, a name or label outside the grammar, a histogram whose buckets decrease or whose
// +Inf bucket differs from its _count. (The npm parsers at hand lose the labels of histograms.)

export interface Sample {
  /** The sample's own name: `x`, or `x_bucket` / `x_sum` / `x_count` of a histogram `x`. */
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['_sum', '_count'] };

function number(raw: string, line: string): number {
  // As Prometheus reads them (Go's ParseFloat): Inf and NaN in any case (prom-client writes "Nan").
  if (/^[+]?inf$/i.test(raw)) return Infinity;
  if (/^-inf$/i.test(raw)) return -Infinity;
  if (/^nan$/i.test(raw)) return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw new Error(`not a number "${raw}" in: ${line}`);
  return Number(raw);
}

/** name{a="x",b="y"} value [timestamp], read character by character. */
function sampleLine(line: string): Sample {
  let i = 0;
  while (i < line.length && line[i] !== '{' && line[i] !== ' ') i++;
  const name = line.slice(0, i);
  if (!NAME.test(name)) throw new Error(`bad metric name in: ${line}`);
  const labels: Record<string, string> = {};
  if (line[i] === '{') {
    i++;
    while (line[i] !== '}') {
      const eq = line.indexOf('=', i);
      const label = line.slice(i, eq);
      if (eq < 0 || !LABEL.test(label) || line[eq + 1] !== '"') throw new Error(`bad label in: ${line}`);
      if (label in labels) throw new Error(`label ${label} twice in: ${line}`);
      let text = '';
      for (i = eq + 2; line[i] !== '"'; i++) {
        if (i >= line.length) throw new Error(`unterminated label value in: ${line}`);
        if (line[i] === '\\') {
          const escaped = line[++i];
          if (escaped === 'n') text += '\n';
          else if (escaped === '\\' || escaped === '"') text += escaped;
          else throw new Error(`bad escape in: ${line}`);
        } else text += line[i];
      }
      labels[label] = text;
      i++;
      if (line[i] === ',') i++;
      else if (line[i] !== '}') throw new Error(`expected , or } in: ${line}`);
    }
    i++;
  }
  if (line[i] !== ' ') throw new Error(`expected a space before the value in: ${line}`);
  const [value, timestamp, extra] = line.slice(i + 1).split(' ');
  if (value === undefined || extra !== undefined || (timestamp !== undefined && !/^-?\d+$/.test(timestamp))) throw new Error(`bad value in: ${line}`);
  return { name, labels, value: number(value, line) };
}

function checkHistogram(family: Family): void {
  const series = new Map<string, { buckets: [number, number][]; count?: number }>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (s.name.endsWith('_bucket')) {
      if (le === undefined) throw new Error(`${family.name}: a bucket without le`);
      entry.buckets.push([number(le, s.name), s.value]);
    } else if (s.name.endsWith('_count')) entry.count = s.value;
  }
  for (const [key, { buckets, count }] of series) {
    buckets.sort((a, b) => a[0] - b[0]);
    if (buckets.at(-1)?.[0] !== Infinity || buckets.at(-1)?.[1] !== count) throw new Error(`${family.name} ${key}: +Inf bucket ${buckets.at(-1)?.[1]} differs from _count ${count}`);
    for (let b = 1; b < buckets.length; b++) if (buckets[b]![1] < buckets[b - 1]![1]) throw new Error(`${family.name} ${key}: buckets decrease`);
  }
}

export function parsePrometheusText(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const families = new Map<string, Family>();
  let current: Family | undefined;
  const declare = (name: string): Family => {
    if (current?.name === name) return current;
    if (families.has(name)) throw new Error(`family ${name} declared twice or split`);
    current = { name, help: '', type: 'untyped', samples: [] };
    families.set(name, current);
    return current;
  };
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta as unknown as [string, string, string, string];
      if (!NAME.test(name)) throw new Error(`bad family name in: ${line}`);
      const family = declare(name);
      if (family.samples.length > 0) throw new Error(`${kind} of ${name} after its samples`);
      if (kind === 'HELP') family.help = rest.replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
      else if (TYPES.has(rest)) family.type = rest as Family['type'];
      else throw new Error(`unknown type in: ${line}`);
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = sampleLine(line);
    const owner = current && (sample.name === current.name || (SUFFIXES[current.type] ?? []).some((s) => sample.name === current!.name + s)) ? current : undefined;
    if (!owner) throw new Error(`sample ${sample.name} outside its family (no TYPE before it)`);
    owner.samples.push(sample);
  }
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}
