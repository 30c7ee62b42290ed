// Operator commands: `npm run cli -- <command> [options]`. Exit codes: 0 done, 1 failed (nothing
// written), 2 usage error. Each command's module is imported when that command runs, so a usage
// error answers at once instead of after loading the whole service.
import { UsageError } from './cli-options.js';

const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  migrate [--env production|demo]
      apply pending migrations (both environments by default)
  bootstrap --env production|demo --chat-id <id> --name <name>
      create or promote an active Director (clearance 5) on the active admin allowlist; idempotent
  seed-demo
      reset the demo database to its fictional organisation (deletes every demo record)
  import-scenarios <file> --env production|demo
      check a training scenario file whole, then create or update its scenarios by slug
  backup --env production|demo --out <file>
      a consistent copy of the environment (embedded: the data folder; PostgreSQL: pg_dump's custom format)
  restore --env production|demo --from <file> [--force]
      replace an embedded environment by a backup (--force when it holds data; the old folder is kept aside)
  move-to-postgres --env production|demo --to <postgres url>
      copy an embedded environment into an empty PostgreSQL database, checked table by table
  verify-audit --env production|demo [--against <head hash>]
      walk the audit hash chain: exit 0 with the rows sealed and the head hash (and the rows
      erased, by reference), 1 naming the first row that does not match; --against a
      checkpoint's head hash (from the log) proves the chain still extends it
  subject-export --env production|demo --chat-id <id> --out <file>
      write everything held about a chat id to <file> (the document GET /admin/subjects/<id> answers)
  subject-erase --env production|demo --chat-id <id> --reason <why> --reference <ref>
      erase a person's personal data everywhere, in one transaction; refused while a punishment
      against them is in force
  pseudonym-key --env production|demo [--adopt]
      print the <ENV>_PSEUDONYM_KEY line to set: the key an earlier release kept in the database
      (then deleted from it), else a new one; --adopt: make the configured key the environment's
      (erasures under another key are refused with 503 PSEUDONYM_KEY_MISMATCH)`;

type Command = (args: string[]) => Promise<number>;
const setup = async () => (await import('./cli-setup.js')).SETUP_COMMANDS;
const content = async () => (await import('./cli-content.js')).CONTENT_COMMANDS;
const backup = async () => (await import('./cli-backup.js')).BACKUP_COMMANDS;
const audit = async () => (await import('./cli-audit.js')).AUDIT_COMMANDS;
const subjects = async () => (await import('./cli-subjects.js')).SUBJECT_COMMANDS;
/** Each command with the module that holds it. */
const COMMANDS: Record<string, () => Promise<Record<string, Command>>> = {
  migrate: setup,
  bootstrap: setup,
  'seed-demo': content,
  'import-scenarios': content,
  backup,
  restore: backup,
  'move-to-postgres': backup,
  'verify-audit': audit,
  'subject-export': subjects,
  'subject-erase': subjects,
  'pseudonym-key': subjects,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const load = command !== undefined && Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (load === undefined) {
    console.error(command ? `Unknown command: ${command}\n\n${USAGE}` : USAGE);
    return 2;
  }
  const run = (await load())[command!]!;
  try {
    return await run(rest);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`${command}: ${err.message}\n\n${USAGE}`);
    return 2;
  }
}

// Failures (a locked embedded folder, an unreachable server, a bad configuration) print their own
// message, which names the cause; the command's transaction, if it had begun, was rolled back.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
