// The bot's API keys (<ENV>_API_KEY and, during a rotation, <ENV>_API_KEY_PREVIOUS) and the realtime
// signing secret: long enough not to be guessed, and every key distinct.
import { ENVIRONMENTS, type EnvironmentConfig, type EnvironmentName } from './environments.js';

/** The least a configured secret may be (and a pseudonym key file, admin/subjects/subject-key.ts). */
export const SECRET_MIN_LENGTH = 32;

export function parseSecret(raw: string): string {
  if (raw.length < SECRET_MIN_LENGTH) throw new Error(`expected at least ${SECRET_MIN_LENGTH} characters`);
  return raw;
}

/** The bot's keys are bearer secrets sent whole in `Authorization`: long enough not to be guessed. */
export const API_KEY_MIN_LENGTH = 16;

export function parseApiKey(raw: string): string {
  if (raw.length < API_KEY_MIN_LENGTH) throw new Error(`expected at least ${API_KEY_MIN_LENGTH} characters`);
  return raw;
}

/**
 * Every configured key (both environments, current and previous) is distinct: a key must resolve to
 * one environment, and a "previous" key equal to the current one would make a rotation a no-op.
 * A previous key alone is refused: it is the rotation's old key, beside the new one.
 */
export function apiKeyProblems(environments: Record<EnvironmentName, EnvironmentConfig>): string[] {
  const problems: string[] = [];
  const keys = ENVIRONMENTS.flatMap((name) => {
    const { apiKey, apiKeyPrevious } = environments[name];
    const prefix = name.toUpperCase();
    if (apiKeyPrevious !== undefined && apiKey === undefined) {
      problems.push(`${prefix}_API_KEY_PREVIOUS: set only during a rotation, beside the new ${prefix}_API_KEY (which is unset)`);
    }
    return [
      { variable: `${prefix}_API_KEY`, name, value: apiKey },
      { variable: `${prefix}_API_KEY_PREVIOUS`, name, value: apiKeyPrevious },
    ];
  });
  for (let i = 0; i < keys.length; i++) {
    for (let j = i + 1; j < keys.length; j++) {
      const [a, b] = [keys[i]!, keys[j]!];
      if (a.value === undefined || a.value !== b.value) continue;
      problems.push(`${a.variable}, ${b.variable}: ${a.name === b.name ? 'the previous key must differ from the current one' : 'each environment needs its own key'}`);
    }
  }
  return problems;
}
