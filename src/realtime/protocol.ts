// The Phoenix channel wire format as Supabase Realtime speaks it to @supabase/realtime-js
// (`vsn` 1.0.0 and 2.0.0; the client's src/lib/serializer.ts and the server's V2Serializer):
// - 1.0.0: text frames, JSON objects {topic, event, payload, ref, join_ref}.
// - 2.0.0: text frames, JSON arrays [join_ref, ref, topic, event, payload]; and binary frames for
//   broadcasts: kind 3 (a client's broadcast push: 7-byte header, then join_ref, ref, topic, event,
//   metadata and the payload) and kind 4 (a broadcast to a client: 5-byte header, then topic,
//   event, metadata and the payload). The client decodes no other binary kind, so none is sent.
export const VERSIONS = ['1.0.0', '2.0.0'] as const;
export type Version = (typeof VERSIONS)[number];

export interface Message {
  join_ref: string | null;
  ref: string | null;
  topic: string;
  event: string;
  payload: Record<string, unknown>;
}

const KIND_USER_BROADCAST_PUSH = 3;
const KIND_USER_BROADCAST = 4;
const JSON_ENCODING = 1;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const refOf = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null);

/** A frame as the client sent it, or a description of what is wrong with it. */
export function decode(version: Version, data: Buffer, isBinary: boolean): Message | { malformed: string } {
  if (isBinary) {
    if (version !== '2.0.0') return { malformed: 'binary frames need vsn 2.0.0' };
    return decodeBinary(data);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString('utf8'));
  } catch {
    return { malformed: 'not JSON' };
  }
  let fields: { join_ref: unknown; ref: unknown; topic: unknown; event: unknown; payload: unknown };
  if (version === '2.0.0') {
    if (!Array.isArray(parsed) || parsed.length !== 5) return { malformed: 'a frame is [join_ref, ref, topic, event, payload]' };
    const [join_ref, ref, topic, event, payload] = parsed as unknown[];
    fields = { join_ref, ref, topic, event, payload };
  } else {
    if (!isObject(parsed)) return { malformed: 'a frame is {topic, event, payload, ref, join_ref}' };
    fields = { join_ref: parsed.join_ref, ref: parsed.ref, topic: parsed.topic, event: parsed.event, payload: parsed.payload };
  }
  if (typeof fields.topic !== 'string' || typeof fields.event !== 'string') return { malformed: 'topic and event must be strings' };
  if (!isObject(fields.payload)) return { malformed: 'payload must be an object' };
  return { join_ref: refOf(fields.join_ref), ref: refOf(fields.ref), topic: fields.topic, event: fields.event, payload: fields.payload };
}

/** Kind 3, a client's broadcast: read so that it can be answered (clients may not broadcast here). */
function decodeBinary(data: Buffer): Message | { malformed: string } {
  if (data.length < 7 || data[0] !== KIND_USER_BROADCAST_PUSH) return { malformed: 'unknown binary frame' };
  const [joinRefLength, refLength, topicLength, eventLength, metaLength] = [data[1]!, data[2]!, data[3]!, data[4]!, data[5]!];
  let offset = 7;
  const take = (n: number) => {
    const s = data.subarray(offset, offset + n).toString('utf8');
    offset += n;
    return s;
  };
  if (data.length < offset + joinRefLength + refLength + topicLength + eventLength + metaLength) return { malformed: 'truncated binary frame' };
  const join_ref = take(joinRefLength);
  const ref = take(refLength);
  const topic = take(topicLength);
  const event = take(eventLength);
  offset += metaLength;
  return { join_ref: join_ref || null, ref: ref || null, topic, event: 'broadcast', payload: { type: 'broadcast', event } };
}

export function encode(version: Version, m: Message): string {
  return version === '2.0.0'
    ? JSON.stringify([m.join_ref, m.ref, m.topic, m.event, m.payload])
    : JSON.stringify({ topic: m.topic, event: m.event, payload: m.payload, ref: m.ref, join_ref: m.join_ref });
}

/**
 * A broadcast to one topic, encoded once for every subscriber of a version: kind 4 for 2.0.0 (the
 * client hands the callback {type: 'broadcast', event, payload}), the JSON object for 1.0.0.
 */
export function encodeBroadcast(version: Version, topic: string, event: string, payloadJson: string): string | Buffer {
  if (version === '1.0.0') return `{"topic":${JSON.stringify(topic)},"event":"broadcast","payload":{"type":"broadcast","event":${JSON.stringify(event)},"payload":${payloadJson}},"ref":null,"join_ref":null}`;
  const topicBytes = Buffer.from(topic, 'utf8');
  const eventBytes = Buffer.from(event, 'utf8');
  if (topicBytes.length > 255 || eventBytes.length > 255) throw new Error('topic and event are at most 255 bytes in a binary frame');
  const header = Buffer.from([KIND_USER_BROADCAST, topicBytes.length, eventBytes.length, 0, JSON_ENCODING]);
  return Buffer.concat([header, topicBytes, eventBytes, Buffer.from(payloadJson, 'utf8')]);
}
