// The scenario file of `npm run cli -- import-scenarios` (DESIGN.md "Training scenarios"): a JSON
// array of {slug, title, published, definition}. The whole file is checked before anything is
// written: its shape against a schema, then what a schema cannot say (unique slugs, objective ids
// and evidence keys; every unlock_when naming an objective of the scenario; every OPEN_EVIDENCE
// objective naming one of its evidence keys). Every fault is reported with its path:
// `[1].definition.objectives[0].complete_when.target: no evidence "x"`.
import { Ajv, type ErrorObject } from 'ajv';
import { Type, type Static } from 'typebox';

/** Trainee actions the engine knows (issue 11); an objective completes on one of them. */
export const TRAINEE_ACTIONS = ['OPEN_EVIDENCE', 'ADD_FINDING', 'CONTACT_PARTY', 'SUBMIT_DECISION'] as const;

const Id = (description: string) => Type.String({ pattern: '^[a-z0-9]+([-_][a-z0-9]+)*$', maxLength: 64, description });
const Text = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '\\S' });

const Objective = Type.Object(
  {
    id: Id('Unique within the scenario'),
    title: Text(200),
    complete_when: Type.Optional(
      Type.Object(
        {
          type: Type.Unsafe<(typeof TRAINEE_ACTIONS)[number]>({ type: 'string', enum: [...TRAINEE_ACTIONS] }),
          target: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'An evidence key for OPEN_EVIDENCE; otherwise what the action must name' })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const Evidence = Type.Object(
  {
    key: Id('Unique within the scenario'),
    title: Text(200),
    content: Text(10_000),
    locked: Type.Boolean(),
    unlock_when: Type.Optional(Type.Object({ objective: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

export const ScenarioDefinition = Type.Object(
  {
    briefing: Text(10_000),
    objectives: Type.Array(Objective, { maxItems: 100 }),
    evidence: Type.Array(Evidence, { maxItems: 100 }),
  },
  { additionalProperties: false },
);
export type ScenarioDefinition = Static<typeof ScenarioDefinition>;

const ScenarioEntry = Type.Object(
  {
    slug: Type.String({ pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', minLength: 1, maxLength: 64 }),
    title: Text(120),
    published: Type.Boolean(),
    definition: ScenarioDefinition,
  },
  { additionalProperties: false },
);
export type ScenarioEntry = Static<typeof ScenarioEntry>;

const ScenarioFile = Type.Array(ScenarioEntry, { minItems: 1, maxItems: 1000 });

const ajv = new Ajv({ allErrors: true, strict: false });
const validateShape = ajv.compile<ScenarioEntry[]>(ScenarioFile);

/** `/1/definition/objectives/0/title` → `[1].definition.objectives[0].title`. */
function pathOf(instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').filter(Boolean);
  if (extra !== undefined) parts.push(extra);
  return parts.map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`)).join('').replace(/^$/, '(file)');
}

function describe(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `${pathOf(error.instancePath, String(params.missingProperty))}: is required`;
    case 'additionalProperties':
      return `${pathOf(error.instancePath, String(params.additionalProperty))}: is not an accepted field`;
    case 'enum':
      return `${pathOf(error.instancePath)}: must be one of ${(params.allowedValues as unknown[]).join(', ')}`;
    case 'pattern':
      return `${pathOf(error.instancePath)}: ${params.pattern === '\\S' ? 'must not be blank' : `must match ${String(params.pattern)}`}`;
    default:
      return `${pathOf(error.instancePath)}: ${error.message ?? 'is invalid'}`;
  }
}

/** What the schema cannot say, for a file whose shape is right. */
function crossReferenceProblems(scenarios: ScenarioEntry[]): string[] {
  const problems: string[] = [];
  const slugs = new Map<string, number>();
  scenarios.forEach((scenario, i) => {
    const first = slugs.get(scenario.slug);
    if (first !== undefined) problems.push(`[${i}].slug: "${scenario.slug}" is already used by [${first}]`);
    else slugs.set(scenario.slug, i);
    const at = `[${i}].definition`;
    const objectives = new Set<string>();
    scenario.definition.objectives.forEach((objective, j) => {
      if (objectives.has(objective.id)) problems.push(`${at}.objectives[${j}].id: "${objective.id}" is not unique`);
      objectives.add(objective.id);
    });
    const keys = new Set<string>();
    scenario.definition.evidence.forEach((item, j) => {
      if (keys.has(item.key)) problems.push(`${at}.evidence[${j}].key: "${item.key}" is not unique`);
      keys.add(item.key);
    });
    scenario.definition.objectives.forEach((objective, j) => {
      const when = objective.complete_when;
      if (when?.type !== 'OPEN_EVIDENCE') return;
      if (when.target === undefined) problems.push(`${at}.objectives[${j}].complete_when.target: is required for OPEN_EVIDENCE`);
      else if (!keys.has(when.target)) problems.push(`${at}.objectives[${j}].complete_when.target: no evidence "${when.target}"`);
    });
    scenario.definition.evidence.forEach((item, j) => {
      const objective = item.unlock_when?.objective;
      if (objective !== undefined && !objectives.has(objective)) problems.push(`${at}.evidence[${j}].unlock_when.objective: no objective "${objective}"`);
    });
  });
  return problems;
}

export type ScenarioFileCheck = { ok: true; scenarios: ScenarioEntry[] } | { ok: false; problems: string[] };

/** Checks a parsed scenario file whole: every fault, each with its path. */
export function checkScenarioFile(data: unknown): ScenarioFileCheck {
  if (!validateShape(data)) return { ok: false, problems: (validateShape.errors ?? []).map(describe) };
  const problems = crossReferenceProblems(data);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, scenarios: data };
}
