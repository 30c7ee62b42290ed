// The demo organisation's training scenarios: two published, one draft, in the import file's
// format (DESIGN.md "Training scenarios") and checked by the same rules as an imported file.
import type { Tx } from '../platform/db/types.js';
import { checkScenarioFile, type ScenarioEntry } from '../training/scenario-file.js';
import { upsertScenarios } from '../training/scenario-queries.js';
import type { SeedCounts } from './seed-counts.js';

export const DEMO_SCENARIOS: readonly ScenarioEntry[] = [
  {
    slug: 'first-response',
    title: 'First response: a harassment report',
    published: true,
    definition: {
      briefing:
        'A member reports repeated harassment in voice chat during a patrol. Read the evidence, talk to the reporter, and decide whether the report is valid.',
      objectives: [
        { id: 'read-log', title: 'Read the chat log', complete_when: { type: 'OPEN_EVIDENCE', target: 'chat-log' } },
        { id: 'contact-reporter', title: 'Contact the reporter', complete_when: { type: 'CONTACT_PARTY', target: 'reporter' } },
        { id: 'decide', title: 'Validate or invalidate the report', complete_when: { type: 'SUBMIT_DECISION' } },
      ],
      evidence: [
        { key: 'chat-log', title: 'Chat log excerpt', content: '[21:04] NightOwl_88: get off my server\n[21:05] NightOwl_88: nobody wants you here', locked: false },
        { key: 'witness', title: 'Witness statement', content: 'BlueFalcon: I heard it on the police radio channel too; it went on for ten minutes.', locked: true, unlock_when: { objective: 'contact-reporter' } },
      ],
    },
  },
  {
    slug: 'ban-evasion',
    title: 'Ban evasion with an alternate account',
    published: true,
    definition: {
      briefing: 'A player banned last week may be back on a new account. Compare the accounts and record your findings before deciding.',
      objectives: [
        { id: 'compare-join-times', title: 'Compare the join times', complete_when: { type: 'OPEN_EVIDENCE', target: 'join-log' } },
        { id: 'record-finding', title: 'Record a finding', complete_when: { type: 'ADD_FINDING' } },
        { id: 'decide', title: 'Decide on the report', complete_when: { type: 'SUBMIT_DECISION' } },
      ],
      evidence: [
        { key: 'join-log', title: 'Server join log', content: 'R3kt left 20:58; R3kt_alt joined 20:59 from the same region, same callsign C-12.', locked: false },
        { key: 'ban-record', title: 'Previous ban record', content: 'R3kt: banned 2026-11-14 for slurs in global chat (RK2TS8).', locked: true, unlock_when: { objective: 'compare-join-times' } },
      ],
    },
  },
  {
    slug: 'appeal-review',
    title: 'Reviewing an appeal (draft)',
    published: false,
    definition: {
      briefing: 'A punished player appeals and brings new evidence. Weigh it against the original case.',
      objectives: [{ id: 'read-appeal', title: 'Read the appeal', complete_when: { type: 'OPEN_EVIDENCE', target: 'appeal' } }],
      evidence: [{ key: 'appeal', title: 'Appeal letter', content: 'I was not the one speaking; my little brother used my account that evening.', locked: false }],
    },
  },
];

export async function seedScenarios(tx: Tx): Promise<SeedCounts> {
  const check = checkScenarioFile(DEMO_SCENARIOS);
  if (!check.ok) throw new Error(`demo scenarios are invalid: ${check.problems.join('; ')}`);
  await upsertScenarios(tx, check.scenarios);
  return { training_scenarios: DEMO_SCENARIOS.length };
}
