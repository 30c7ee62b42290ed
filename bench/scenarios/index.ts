import type { Scenario } from '../types.js';
import { adminHealth } from './admin-health.js';
import { auditSealing } from './audit-sealing.js';
import { dataGrowth } from './data-growth.js';
import { reportCreate } from './report-create.js';
import { reportsAtScale } from './reports-at-scale.js';
import { embeddedStartup } from './embedded-startup.js';
import { gameLookup } from './game-lookup.js';
import { idempotencyCost } from './idempotency-cost.js';
import { metricsOverhead } from './metrics-overhead.js';
import { migrationUnderLoad } from './migration-under-load.js';
import { poolerCost } from './pooler-cost.js';
import { queueDrain } from './queue-drain.js';
import { realtimeFanout, realtimeFanoutTenfold } from './realtime-fanout.js';
import { authMe, generateCase, queuePoll, root } from './single-route.js';
import { soakScenario } from './soak.js';
import { subjectPrivacy } from './subject-privacy.js';
import { trainingClassroom } from './training-classroom.js';
import { visibilityCost } from './visibility-cost.js';

/** Run order; a new scenario is one file in this folder (single routes against the bare hello-world: one entry in single-route.ts) plus one entry here. */
export const scenarios: Scenario[] = [root, generateCase, authMe, metricsOverhead, embeddedStartup, reportCreate, idempotencyCost, reportsAtScale, queuePoll, queueDrain, adminHealth, gameLookup, trainingClassroom, realtimeFanout, realtimeFanoutTenfold, auditSealing, dataGrowth, visibilityCost, poolerCost, subjectPrivacy, migrationUnderLoad, soakScenario];
