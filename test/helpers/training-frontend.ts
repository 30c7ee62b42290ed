// The training front end's realtime client, as docs/realtime.md quotes it line for line and
// test/realtime-supabase-js.test.ts runs it: @supabase/supabase-js with the service's token given
// the way Supabase documents third-party auth (an `accessToken` callback).
import { createClient, type RealtimeChannel, type SupabaseClient, type SupabaseClientOptions } from '@supabase/supabase-js';

/** The front end's own GET to this service with the agent's session cookie, resolving to the JSON body. */
export type Api = <T>(path: string) => Promise<T>;

export interface TrainingBroadcast {
  session_id: number;
  event: { type: string; data: unknown };
}

interface RealtimeToken {
  token: string;
  ttl: number;
  expires_at: string;
}

/**
 * supabase-js asks `accessToken` when created, on connect, after every join and at every heartbeat
 * (25 s), and pushes a changed token to the channels already joined (the hub closes a channel
 * whose token expires). A join under way while the token changes keeps the previous one until the
 * next change, so a token is renewed once less than 60 % of its lifetime is left: two are always valid.
 */
const RENEW_WHEN_LEFT = 0.6;
const fresh = (t: RealtimeToken | undefined) => t !== undefined && Date.parse(t.expires_at) - Date.now() >= t.ttl * 1000 * RENEW_WHEN_LEFT;

export async function trainingRealtime(api: Api, realtime: SupabaseClientOptions<'public'>['realtime'] = {}): Promise<SupabaseClient> {
  const config = await api<{ backend_url: string; anon_key: string; token_path: string }>('/training/realtime-config');
  let token: Promise<RealtimeToken> | undefined;
  const accessToken = async () => {
    const held = token;
    // One request at a time (callers meanwhile share it); a failed one is tried again at the next call.
    if (!fresh(await held?.catch(() => undefined)) && token === held) token = api<RealtimeToken>(config.token_path);
    return (await token!).token;
  };
  const supabase = createClient(config.backend_url, config.anon_key, { accessToken, realtime });
  // Before the first subscribe: createClient asks for the token without waiting for it, and a
  // join sent before the answer would carry no token (refused once, then retried).
  await supabase.realtime.setAuth();
  return supabase;
}

/** `training:user:<chat_id>` or `training:session:<id>`; supabase-js rejoins it by itself after a reconnect. */
export function subscribeTraining(
  supabase: SupabaseClient,
  topic: string,
  onEvent: (event: string, payload: TrainingBroadcast) => void,
  onStatus: (status: string, err?: Error) => void,
): RealtimeChannel {
  return supabase
    .channel(topic, { config: { private: true } })
    .on('broadcast', { event: '*' }, ({ event, payload }) => onEvent(event, payload as TrainingBroadcast))
    .subscribe(onStatus);
}
