import { fork } from 'node:child_process';
import * as dgram from 'node:dgram';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { CABLE_STATS } from '../fabric/cable.js';
import { JUMBO_FRAME_BYTES, parseUdpEndpoint, UDP_CABLE_STATS, UdpCable, type UdpCableStats } from './udp-cable.js';

const open: UdpCable[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) {
    c.close();
    await c.closed;
  }
});

async function cable(local: string, remote: string, extra: { acceptFrom?: 'remote' | 'any'; maxFrameBytes?: number } = {}) {
  const c = await UdpCable.open({ local, remote, ...extra });
  open.push(c);
  return c;
}

/** A free loopback UDP port (bind 0, read, close). */
async function freePort(): Promise<number> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A pair of cable ends on 127.0.0.1, each the other's remote. */
async function pair() {
  const [pa, pb] = [await freePort(), await freePort()];
  const a = await cable(`127.0.0.1:${pa}`, `127.0.0.1:${pb}`);
  const b = await cable(`127.0.0.1:${pb}`, `127.0.0.1:${pa}`);
  return { a, b };
}

function frame(i: number, len: number): Uint8Array {
  const f = new Uint8Array(len);
  f.set([0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x88, 0xb5], 0); // local experimental ethertype
  for (let k = 14; k < len; k++) f[k] = (i * 13 + k) & 0xff;
  return f;
}

function collect(c: UdpCable, n: number, timeoutMs = 10_000): Promise<Uint8Array[]> {
  const got: Uint8Array[] = [];
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out with ${got.length}/${n} frames; stats ${JSON.stringify(c.stats)}`)), timeoutMs);
    c.onReceive((f) => {
      got.push(f);
      if (got.length === n) {
        clearTimeout(t);
        resolve(got);
      }
    });
  });
}

/**
 * Sends `frames` from `from` and collects as many at `to`, with at most
 * `window` in flight: UDP has no back-pressure and the OS drops what does
 * not fit the receive buffer (as a real link drops what a port cannot
 * take), so the test paces itself like a transmitter would.
 */
function transfer(from: UdpCable, to: UdpCable, frames: Uint8Array[], window = 16, timeoutMs = 10_000): Promise<Uint8Array[]> {
  const got: Uint8Array[] = [];
  let sent = 0;
  const pump = () => {
    while (sent < frames.length && sent - got.length < window) from.send(frames[sent++]!);
  };
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out with ${got.length}/${frames.length} frames; stats ${JSON.stringify(to.stats)}`)), timeoutMs);
    to.onReceive((f) => {
      got.push(f);
      if (got.length === frames.length) {
        clearTimeout(t);
        resolve(got);
      } else {
        pump();
      }
    });
    pump();
  });
}

/** Byte equality at memcmp speed (vitest's deep equality walks typed arrays element by element). */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.length), Buffer.from(b.buffer, b.byteOffset, b.length)) === 0;
}

/** Indices of the frames that differ from what was expected. */
function mismatches(got: Uint8Array[], want: (i: number) => Uint8Array): number[] {
  return got.flatMap((f, i) => (sameBytes(f, want(i)) ? [] : [i]));
}

const sizes = (n: number) => Array.from({ length: n }, (_, i) => [14, 60, 1514, 4200, JUMBO_FRAME_BYTES][i % 5]!);

describe('UdpCable addresses', () => {
  it('parses literal IPv4 and bracketed IPv6', () => {
    expect(parseUdpEndpoint('127.0.0.1:4791', 'x')).toEqual({ address: '127.0.0.1', port: 4791, family: 4 });
    expect(parseUdpEndpoint('[::1]:5000', 'x')).toEqual({ address: '::1', port: 5000, family: 6 });
    expect(parseUdpEndpoint('127.0.0.1:0', 'x', true).port).toBe(0);
  });

  it('rejects bad addresses with FABRIC_BAD_ADDRESS and a clear message', async () => {
    const cases: [string, string, RegExp][] = [
      ['localhost:5000', '127.0.0.1:5001', /not a literal IPv4 or IPv6 address.*127\.0\.0\.1/],
      ['127.0.0.1', '127.0.0.1:5001', /missing ':port'/],
      ['127.0.0.1:70000', '127.0.0.1:5001', /port "70000" is not 0\.\.65535/],
      ['127.0.0.1:5000', '127.0.0.1:0', /port 0 is only allowed for the local address/],
      ['::1:5000', '[::1]:5001', /must be in brackets/],
      ['[::1:5000', '[::1]:5001', /'\[addr\]:port'/],
      ['127.0.0.1:5000', '[::1]:5001', /IPv6 but local .* is IPv4/],
      ['127.0.0.1:5000', '0.0.0.0:5001', /unspecified/],
      ['127.0.0.1:5000', '239.1.2.3:5001', /multicast/],
      [':5000', '127.0.0.1:5001', /missing host/],
      ['256.0.0.1:5000', '127.0.0.1:5001', /not a literal/],
    ];
    for (const [local, remote, msg] of cases) {
      const err = await UdpCable.open({ local, remote }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, `${local} -> ${remote}`).toMatchObject({ code: 'FABRIC_BAD_ADDRESS', name: 'FabricError' });
      expect((err as Error).message).toMatch(msg);
    }
  });

  it('rejects bad options and a port in use with typed errors', async () => {
    await expect(UdpCable.open({ local: '127.0.0.1:0', remote: '127.0.0.1:9', maxFrameBytes: 10 })).rejects.toMatchObject({ code: 'FABRIC_BAD_CONFIG' });
    const taken = await cable('127.0.0.1:0', '127.0.0.1:9');
    await expect(UdpCable.open({ local: `127.0.0.1:${taken.localEndpoint.port}`, remote: '127.0.0.1:9' })).rejects.toMatchObject({
      code: 'FABRIC_BIND_FAILED',
      message: expect.stringMatching(/EADDRINUSE/),
    });
  });
});

describe('UdpCable pair on 127.0.0.1', () => {
  it('carries frames both ways, one datagram per frame, bytes intact', async () => {
    const { a, b } = await pair();
    const n = 400;
    const lens = sizes(n);
    const ab = lens.map((len, i) => frame(i, len));
    const ba = lens.map((_len, i) => frame(1000 + i, lens[n - 1 - i]!));
    const [gotB, gotA] = await Promise.all([transfer(a, b, ab), transfer(b, a, ba)]);
    // Loopback keeps order; compare by index so a reorder would show clearly.
    expect(mismatches(gotB, (i) => frame(i, lens[i]!))).toEqual([]);
    expect(mismatches(gotA, (i) => frame(1000 + i, lens[n - 1 - i]!))).toEqual([]);
    expect(gotB[0]).toBeInstanceOf(Uint8Array);
    const total = lens.reduce((x, y) => x + y, 0);
    expect(a.stats).toMatchObject({ framesSent: n, bytesSent: total, framesReceived: n, framesDropped: 0 });
    expect(b.stats).toMatchObject({ framesSent: n, framesReceived: n, bytesReceived: total, framesDropped: 0 });
  });

  it('copies on send: the sender may reuse its buffer at once', async () => {
    const { a, b } = await pair();
    const got = collect(b, 2);
    const buf = frame(1, 100);
    a.send(buf);
    buf.fill(0xee);
    a.send(buf);
    const [first, second] = await got;
    expect(first).toEqual(frame(1, 100));
    expect(second).toEqual(new Uint8Array(100).fill(0xee));
  });

  it('drops and counts runts, oversize datagrams and strangers', async () => {
    const { a, b } = await pair();
    const got = collect(b, 1);
    const stranger = dgram.createSocket('udp4');
    await new Promise<void>((r) => stranger.bind(0, '127.0.0.1', r));
    const send = (s: dgram.Socket, len: number) => new Promise<void>((r) => s.send(new Uint8Array(len), b.localEndpoint.port, '127.0.0.1', () => r()));
    await send(stranger, 60); // not from b's remote
    stranger.close();
    a.send(new Uint8Array(13)); // too small to send
    a.send(new Uint8Array(JUMBO_FRAME_BYTES + 1)); // too large to send
    a.send(frame(7, 64)); // the one that arrives, last, so the others have been seen
    expect(await got).toEqual([frame(7, 64)]);
    expect(a.stats).toMatchObject({ framesSent: 1, txBadSize: 2, framesDropped: 2 });
    expect(b.stats).toMatchObject({ framesReceived: 1, rxForeign: 1, framesDropped: 1 });
  });

  it('with acceptFrom any, checks sizes on receive', async () => {
    const b = await cable('127.0.0.1:0', '127.0.0.1:9', { acceptFrom: 'any', maxFrameBytes: 1514 });
    const got = collect(b, 1);
    const s = dgram.createSocket('udp4');
    await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
    for (const len of [13, 1515, 9000, 60]) {
      await new Promise<void>((r) => s.send(new Uint8Array(len).fill(len & 0xff), b.localEndpoint.port, '127.0.0.1', () => r()));
    }
    expect((await got)[0]!.length).toBe(60);
    s.close();
    expect(b.stats).toMatchObject({ framesReceived: 1, rxTooSmall: 1, rxTooLarge: 2, framesDropped: 3 });
  });

  it('counts sends after close; describes every stat', async () => {
    const { a } = await pair();
    a.close();
    a.send(frame(1, 60));
    const s: UdpCableStats = a.stats;
    expect(s).toMatchObject({ txClosed: 1, framesDropped: 1, framesSent: 0 });
    const declared = [...CABLE_STATS, ...UDP_CABLE_STATS].map((d) => d.name).sort();
    expect(declared).toEqual(Object.keys(s).sort());
  });

  it('works over IPv6 loopback too', async () => {
    const probe = await UdpCable.open({ local: '[::1]:0', remote: '[::1]:9' }).catch(() => null);
    if (!probe) return; // no IPv6 loopback on this host
    const pa = probe.localEndpoint.port;
    probe.close();
    await probe.closed;
    const b = await cable('[::1]:0', `[::1]:${pa}`);
    const a = await cable(`[::1]:${pa}`, `[::1]:${b.localEndpoint.port}`);
    const got = collect(b, 3);
    for (let i = 0; i < 3; i++) a.send(frame(i, 100));
    expect(await got).toEqual([frame(0, 100), frame(1, 100), frame(2, 100)]);
  });
});

describe('UdpCable to another process', () => {
  it('a forked child echoes frames back over its own UdpCable', async () => {
    const [mine, theirs] = [await freePort(), await freePort()];
    const script = fileURLToPath(new URL('../../test/fabric/udp-echo-child.ts', import.meta.url));
    const register = new URL('../../test/fabric/register-ts.mjs', import.meta.url).href;
    const child = fork(script, [`127.0.0.1:${theirs}`, `127.0.0.1:${mine}`], { execArgv: ['--import', register], stdio: 'inherit' });
    try {
      const messages: { ready?: boolean; pid?: number; stats?: UdpCableStats }[] = [];
      const next = () =>
        new Promise<(typeof messages)[number]>((resolve, reject) => {
          child.once('message', (m) => resolve(m as (typeof messages)[number]));
          child.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
        });
      const ready = await next();
      expect(ready).toMatchObject({ ready: true });
      expect(ready.pid).not.toBe(process.pid);
      const c = await cable(`127.0.0.1:${mine}`, `127.0.0.1:${theirs}`);
      const n = 1000;
      const lens = sizes(n);
      const got = await transfer(
        c,
        c,
        lens.map((len, i) => frame(i, len)),
      );
      expect(
        mismatches(got, (i) => {
          const want = frame(i, lens[i]!);
          want.set(frame(i, 14).subarray(6, 12), 0); // MACs swapped by the child
          want.set(frame(i, 14).subarray(0, 6), 6);
          return want;
        }),
      ).toEqual([]);
      const bye = next();
      child.send('close');
      const { stats } = await bye;
      expect(stats).toMatchObject({ framesReceived: n, framesSent: n, framesDropped: 0 });
    } finally {
      if (child.exitCode === null) child.kill();
    }
  });
});
