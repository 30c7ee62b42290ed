// A raw TCP client for what fetch and inject cannot send: duplicate headers, slow or absent
// bodies, oversized request lines. Resolves when the server closes the connection.
import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from the connection to the server closing it. */
  elapsedMs: number;
}

export interface RawRequestOptions {
  /** Written after `head`, one piece every `intervalMs` (a trickling body). */
  trickle?: { pieces: string[]; intervalMs: number };
  /** Give up (reject) after this long without the server closing the connection. */
  timeoutMs?: number;
}

export function rawRequest(port: number, head: string, options: RawRequestOptions = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${options.timeoutMs ?? 5000} ms`));
    }, options.timeoutMs ?? 5000);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(giveUp);
      clearInterval(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const [rawHead = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = rawHead.split('\r\n');
      const headers = Object.fromEntries(
        headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(statusLine.split(' ')[1] ?? 0), headers, body: rest.join('\r\n\r\n'), elapsedMs: Date.now() - started });
    });
    socket.on('connect', () => {
      socket.write(head);
      const pieces = [...(options.trickle?.pieces ?? [])];
      if (pieces.length > 0) {
        timer = setInterval(() => {
          const piece = pieces.shift();
          if (piece === undefined || socket.destroyed) return clearInterval(timer);
          socket.write(piece);
        }, options.trickle!.intervalMs);
      }
    });
  });
}
