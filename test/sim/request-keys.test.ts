/**
 * The scenario runner's request keys (src/scenario/timeline.ts): which
 * device a frame is addressed to, and the table of values by (sender,
 * destination device, remote QPN) that the timeline and the watchdog look
 * request frames up in.
 */
import { describe, expect, it } from 'vitest';
import { RequestKeys } from '../../src/scenario/timeline.js';

/** An Ethernet frame to `mac` with a BTH at 42 naming remote QPN `qpn`. */
function frame(mac: readonly number[], qpn: number): Uint8Array {
  const f = new Uint8Array(64);
  f.set(mac, 0);
  f[47] = qpn >> 16;
  f[48] = (qpn >> 8) & 0xff;
  f[49] = qpn & 0xff;
  return f;
}

describe('RequestKeys', () => {
  // Devices 1 and 2 share their MACs' low 24 bits (they are told apart by the high ones); device 3 has two ports.
  const keys = new RequestKeys(
    [['02:00:00:00:00:01'], ['02:00:00:aa:bb:cc'], ['fe:ff:ff:aa:bb:cc'], ['02:00:00:00:00:04', '02:00:00:00:01:04']],
    [[], [], [], [{ lid: 0x20, lmc: 1 }]],
  );

  it('finds the device by destination MAC, the high three bytes included', () => {
    expect(keys.destDevice(frame([2, 0, 0, 0, 0, 1], 0))).toBe(0);
    expect(keys.destDevice(frame([2, 0, 0, 0xaa, 0xbb, 0xcc], 0))).toBe(1);
    expect(keys.destDevice(frame([0xfe, 0xff, 0xff, 0xaa, 0xbb, 0xcc], 0))).toBe(2);
    expect(keys.destDevice(frame([2, 0, 0, 0, 1, 4], 0))).toBe(3);
    expect(keys.destDevice(frame([2, 0, 0, 0, 0, 4], 0))).toBe(3);
    // Low bytes of a known MAC, other high bytes: nobody's.
    expect(keys.destDevice(frame([4, 0, 0, 0xaa, 0xbb, 0xcc], 0))).toBe(-1);
    expect(keys.destDevice(frame([2, 0, 0, 0, 0, 9], 0))).toBe(-1);
  });

  it('finds a native IB destination by DLID, over its LMC range', () => {
    const lrh = (dlid: number) => Uint8Array.of(0, 0, dlid >> 8, dlid & 0xff);
    expect(keys.destDevice(lrh(0x20), true)).toBe(3);
    expect(keys.destDevice(lrh(0x21), true)).toBe(3);
    expect(keys.destDevice(lrh(0x22), true)).toBe(-1);
    expect(keys.destDevice(Uint8Array.of(0, 0), true)).toBe(-1);
  });

  it('tells apart requests to one QPN of different devices, and from different senders', () => {
    const t = keys.table<string>();
    t.set(0, 1, 2, 'h0 to h1 QP 2');
    t.set(0, 2, 2, 'h0 to h2 QP 2');
    t.set(3, 1, 2, 'h3 to h1 QP 2');
    t.set(0, 1, 0xffffff, 'h0 to h1 QP 0xffffff');
    expect(t.ofFrame(0, frame([2, 0, 0, 0xaa, 0xbb, 0xcc], 2), 42)).toBe('h0 to h1 QP 2');
    expect(t.ofFrame(0, frame([0xfe, 0xff, 0xff, 0xaa, 0xbb, 0xcc], 2), 42)).toBe('h0 to h2 QP 2');
    expect(t.ofFrame(3, frame([2, 0, 0, 0xaa, 0xbb, 0xcc], 2), 42)).toBe('h3 to h1 QP 2');
    expect(t.ofFrame(0, frame([2, 0, 0, 0xaa, 0xbb, 0xcc], 0xffffff), 42)).toBe('h0 to h1 QP 0xffffff');
    // Misses: another QPN, a sender or destination with no entry, a frame to no known device.
    expect(t.ofFrame(0, frame([2, 0, 0, 0xaa, 0xbb, 0xcc], 3), 42)).toBeUndefined();
    expect(t.ofFrame(1, frame([2, 0, 0, 0xaa, 0xbb, 0xcc], 2), 42)).toBeUndefined();
    expect(t.ofFrame(7, frame([2, 0, 0, 0xaa, 0xbb, 0xcc], 2), 42)).toBeUndefined();
    expect(t.ofFrame(0, frame([2, 0, 0, 0, 0, 1], 2), 42)).toBeUndefined();
    expect(t.ofFrame(0, frame([2, 0, 0, 0, 0, 9], 2), 42)).toBeUndefined();
    expect(t.get(3, 2, 2)).toBeUndefined();
    expect(t.get(-1, 1, 2)).toBeUndefined();
  });
});
