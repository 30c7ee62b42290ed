// Schema pieces shared by the administration routes (spec: System administration).
import { Type } from 'typebox';

/** Every admin mutation's reason (spec: "every mutation needs a reason"): kept in the audit trail. */
export const AdminReason = Type.String({ minLength: 1, maxLength: 500, pattern: '\\S', description: 'Why: kept in the admin audit trail' });

export const ReasonBody = Type.Object({ reason: AdminReason }, { additionalProperties: false });

export const CorrelationId = Type.String({ description: 'Ties the change to its admin audit row and its event' });
