/**
 * The TCP side channel the C tools use to swap queue pair addresses, as
 * promises: connect like `getaddrinfo` + `connect()` (every address of the
 * name is tried), listen like `bind()` + `listen(1)` + one `accept()`, and
 * read/write whole messages.
 */
import { connect as netConnect, createServer, type Server, type Socket } from 'node:net';

/** A connected stream socket with a `read(n)` that waits for n bytes. */
export class MsgSocket {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private ended = false;
  private failure: Error | null = null;
  private waiter: (() => void) | null = null;

  constructor(readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => {
      this.chunks.push(d);
      this.buffered += d.length;
      this.wake();
    });
    socket.on('end', () => {
      this.ended = true;
      this.wake();
    });
    socket.on('error', (e) => {
      this.failure = e;
      this.ended = true;
      this.wake();
    });
    socket.on('close', () => {
      this.ended = true;
      this.wake();
    });
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  /**
   * Exactly `n` bytes, or fewer if the peer closed first (what a C loop of
   * read() until n bytes or 0 gives). Rejects on a socket error.
   */
  async read(n: number): Promise<Buffer> {
    while (this.buffered < n && !this.ended) {
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
    if (this.buffered < n && this.failure) throw this.failure;
    const all = Buffer.concat(this.chunks);
    const out = all.subarray(0, Math.min(n, all.length));
    const rest = all.subarray(out.length);
    this.chunks = rest.length ? [rest] : [];
    this.buffered = rest.length;
    return Buffer.from(out);
  }

  write(data: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.socket.destroyed) {
        reject(new Error('socket closed'));
        return;
      }
      this.socket.write(data, (err) => (err ? reject(err) : resolve()));
    });
  }

  close(): void {
    this.socket.end();
    this.socket.destroy();
  }
}

/** Connects to host:port (C: getaddrinfo(AF_UNSPEC) + connect() on each result). */
export function tcpConnect(host: string, port: number): Promise<MsgSocket> {
  return new Promise((resolve, reject) => {
    const s = netConnect({ host, port, autoSelectFamily: true });
    const onError = (e: Error): void => {
      s.destroy();
      reject(e);
    };
    s.once('error', onError);
    s.once('connect', () => {
      s.off('error', onError);
      resolve(new MsgSocket(s));
    });
  });
}

/**
 * Listens on every local address at `port` (0: any free port), accepts one
 * connection and stops listening, as the C servers do. `onListening` gets the
 * bound port as soon as a client can connect.
 */
export function tcpAcceptOne(port: number, onListening?: (port: number) => void): Promise<MsgSocket> {
  return new Promise((resolve, reject) => {
    const server: Server = createServer({ noDelay: true });
    server.once('error', reject);
    server.once('connection', (s: Socket) => {
      server.close();
      resolve(new MsgSocket(s));
    });
    server.listen({ port, exclusive: true }, () => {
      const addr = server.address();
      if (addr && typeof addr === 'object') onListening?.(addr.port);
    });
  });
}

/**
 * Listens at `port` (0: any free port) and accepts `n` connections, in
 * order, then stops listening: C's bind() + listen(n) + n accept()s
 * (xsrq_pingpong's server with `-c n`).
 */
export function tcpAcceptMany(port: number, n: number, onListening?: (port: number) => void): Promise<MsgSocket[]> {
  return new Promise((resolve, reject) => {
    const socks: MsgSocket[] = [];
    const server: Server = createServer({ noDelay: true });
    server.once('error', reject);
    server.on('connection', (s: Socket) => {
      socks.push(new MsgSocket(s));
      if (socks.length === n) {
        server.close();
        resolve(socks);
      }
    });
    server.listen({ port, exclusive: true, backlog: n }, () => {
      const addr = server.address();
      if (addr && typeof addr === 'object') onListening?.(addr.port);
    });
  });
}
