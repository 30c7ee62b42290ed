// A TCP proxy in front of a database server that can be frozen: it stops forwarding in both
// directions without closing anything, as a hung server or a network partition that sends no
// resets does (issue 40), and new connections are accepted and held unanswered meanwhile. Thawed,
// everything held flows again. `connectDelayMs` holds each new connection that long before it is
// forwarded (a loaded server forking backends, a TLS handshake). A test's own, on loopback.
import net from 'node:net';

export interface FreezableProxy {
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  through(url: string): string;
  /** How long each new connection waits before it is forwarded (0: at once). */
  connectDelayMs: number;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function freezableProxy(target: { host: string; port: number }): Promise<FreezableProxy> {
  let frozen = false;
  const pairs = new Set<[net.Socket, net.Socket | undefined]>();
  const link = (pair: [net.Socket, net.Socket | undefined]) => {
    const [client] = pair;
    const upstream = net.connect(target.port, target.host);
    pair[1] = upstream;
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.resume();
  };
  const server = net.createServer((client) => {
    const pair: [net.Socket, net.Socket | undefined] = [client, undefined];
    pairs.add(pair);
    client.pause();
    client.on('error', () => client.destroy());
    const forward = () => {
      if (!frozen && pair[1] === undefined && !client.destroyed) link(pair);
    };
    if (proxy.connectDelayMs > 0) setTimeout(forward, proxy.connectDelayMs);
    else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const proxy: FreezableProxy = {
    connectDelayMs: 0,
    port,
    through: (url) => {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    freeze() {
      frozen = true;
      for (const [client, upstream] of pairs) {
        client.pause();
        upstream?.pause();
      }
    },
    thaw() {
      frozen = false;
      for (const pair of pairs) {
        if (pair[1] === undefined) link(pair);
        else {
          pair[0].resume();
          pair[1].resume();
        }
      }
    },
    async close() {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream?.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
