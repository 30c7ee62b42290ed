// A logger whose JSON lines a test reads back: what the service logs is part of what it does.
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

export type LogLine = Record<string, any>;

/** A pino logger at `level` (warn by default), and the lines it has written, parsed. */
export function capturedLog(level: pino.LevelWithSilent = 'warn'): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}
