import { Type, type Static } from 'typebox';
import { RANKS } from '../platform/auth/permissions.js';
import { nullableString, stringEnum, timestamp } from '../platform/http/schemas.js';
import { AGENT_STATUSES } from './queries.js';

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const ChatId = Type.String({ pattern: '^[0-9]{1,20}$', description: 'Chat platform user id (a snowflake, as text)' });
export const AgentStatus = stringEnum(AGENT_STATUSES);
export const AgentRank = stringEnum(RANKS);

export const Agent = Type.Object(
  {
    chat_id: Type.String(),
    name: nullable(Type.String()),
    status: Type.String(),
    agent_rank: nullable(Type.String()),
    security_id: nullable(Type.String()),
    agreement_id: nullable(Type.String()),
    agent_id: nullable(Type.String()),
    clearance_id: nullable(Type.String()),
    clearance_level: nullable(Type.Integer()),
    is_trainer: Type.Boolean(),
    created_at: timestamp(),
    updated_at: timestamp(),
  },
  { $id: 'Agent', title: 'Agent' },
);

export const AgentParams = Type.Object({ chat_id: ChatId });
export const AgentListQuery = Type.Object({ status: Type.Optional(AgentStatus) }, { additionalProperties: false });
export const AgentList = Type.Object({ success: Type.Literal(true), agents: Type.Array(Type.Ref('Agent')) });
export const AgentResult = Type.Object({ success: Type.Literal(true), agent: Type.Ref('Agent') });

const Name = Type.String({ minLength: 1, maxLength: 100 });
export const Reason = Type.String({ minLength: 1, maxLength: 500, description: 'Why: kept in the audit trail' });

export const CreateAgentBody = Type.Object(
  { chat_id: ChatId, name: Type.Optional(Name), status: Type.Optional(AgentStatus), agent_rank: Type.Optional(AgentRank) },
  { additionalProperties: false },
);
export type CreateAgentBody = Static<typeof CreateAgentBody>;

/** Both paths of PATCH /agents/<chat_id>/update; the handler enforces which fields each may use. */
export const UpdateAgentBody = Type.Object(
  {
    name: Type.Optional(Name),
    status: Type.Optional(AgentStatus),
    security_id: Type.Optional(nullableString({ minLength: 1, maxLength: 64 })),
    agreement_id: Type.Optional(nullableString({ pattern: '^AGM-[0-9]{5}$' })),
    agent_id: Type.Optional(nullableString({ pattern: '^SVC-AG-[0-9]{5}$' })),
    clearance_id: Type.Optional(nullableString({ pattern: '^CL-[0-9]{3}$' })),
    clearance_level: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
    agent_rank: Type.Optional(AgentRank),
    is_trainer: Type.Optional(Type.Boolean()),
    reason: Type.Optional(Reason),
  },
  { additionalProperties: false },
);
export type UpdateAgentBody = Static<typeof UpdateAgentBody>;
