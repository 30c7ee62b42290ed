// The training center's reads (spec: Endpoints "Training center"; issue 11). Browser sessions only:
// the bot key gets 403. Trainers are agents with is_trainer or supervisor rank.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import { AGENT_COLUMNS, type AgentRow } from '../agents/queries.js';
import { sessionAgent } from '../platform/auth/guards.js';
import { COMMON_ERRORS, errorResponses, timestamp } from '../platform/http/schemas.js';
import { ScenarioDefinition } from './scenario-file.js';
import { isTrainer, trainer } from './session-access.js';

const tags = ['Training center'];

const Me = Type.Object({ success: Type.Literal(true), is_trainer: Type.Boolean(), agent: Type.Ref('Agent') });
const Scenario = Type.Object({
  id: Type.Integer(),
  slug: Type.String(),
  title: Type.String(),
  published: Type.Boolean(),
  definition: ScenarioDefinition,
  created_at: timestamp(),
  updated_at: timestamp(),
});
type Scenario = Static<typeof Scenario>;
const ScenarioList = Type.Object({ success: Type.Literal(true), scenarios: Type.Array(Scenario, { description: 'Every scenario, drafts included, by title' }) });
const TraineeList = Type.Object({ success: Type.Literal(true), trainees: Type.Array(Type.Ref('Agent'), { description: 'Agents whose status is onboarding, by name' }) });

export const trainingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/training/me',
    { config: { auth: 'session' }, schema: { tags, operationId: 'getTrainingProfile', summary: 'The signed-in agent and whether they train', response: { 200: Me, ...errorResponses(...COMMON_ERRORS) } } },
    async (request) => {
      const agent = sessionAgent(request);
      return { success: true as const, is_trainer: isTrainer(agent), agent };
    },
  );

  app.get(
    '/training/scenarios',
    { config: { auth: 'session', trainer: true }, schema: { tags, operationId: 'listScenarios', summary: 'The scenario catalog, drafts included, by title (trainers)', response: { 200: ScenarioList, ...errorResponses(...COMMON_ERRORS) } } },
    async (request) => {
      trainer(request);
      const { rows } = await request.environment.db.query<Scenario>(
        'select id, slug, title, published, definition, created_at, updated_at from training_scenarios order by title, id',
      );
      return { success: true as const, scenarios: rows };
    },
  );

  app.get(
    '/training/trainees',
    { config: { auth: 'session', trainer: true }, schema: { tags, operationId: 'listTrainees', summary: 'Agents whose status is exactly onboarding, by name (trainers)', response: { 200: TraineeList, ...errorResponses(...COMMON_ERRORS) } } },
    async (request) => {
      trainer(request);
      const { rows } = await request.environment.db.query<AgentRow>(
        `select ${AGENT_COLUMNS} from agents where status = 'onboarding' order by name nulls last, chat_id`,
      );
      return { success: true as const, trainees: rows };
    },
  );
};
