/**
 * MAC Control frames: IEEE 802.3x PAUSE and IEEE 802.1Qbb priority flow
 * control (class-based PAUSE). Ethertype 0x8808 to 01-80-C2-00-00-01,
 * padded to the 60-byte minimum (SPEC-DIGEST §5; Wireshark packet-maccontrol.c).
 */
import { EtherType, ETH_MIN_FRAME, type EthernetHeader, readEthernet, writeEthernet } from './ethernet.js';

export const PAUSE_DST_MAC = Uint8Array.of(0x01, 0x80, 0xc2, 0x00, 0x00, 0x01);

export const enum MacControlOpcode {
  PAUSE = 0x0001,
  PFC = 0x0101,
}

export interface PauseFrame {
  kind: 'pause';
  src: Uint8Array;
  /** In quanta of 512 bit times; 0 = resume. */
  pauseTime: number;
}

export interface PfcFrame {
  kind: 'pfc';
  src: Uint8Array;
  /** Bit i set: the time for priority i applies. */
  classEnable: number;
  /** Eight pause times, in quanta; 0 = XON. */
  pauseTimes: number[];
}

export type MacControlFrame = PauseFrame | PfcFrame;

function header(src: Uint8Array): EthernetHeader {
  return { dst: PAUSE_DST_MAC, src, vlan: null, etherType: EtherType.MAC_CONTROL };
}

export function encodePause(src: Uint8Array, pauseTime: number): Uint8Array {
  const buf = new Uint8Array(ETH_MIN_FRAME);
  let p = writeEthernet(buf, 0, header(src));
  buf[p++] = 0x00;
  buf[p++] = MacControlOpcode.PAUSE;
  buf[p++] = (pauseTime >>> 8) & 0xff;
  buf[p] = pauseTime & 0xff;
  return buf;
}

/** `pauseTimes[i]` applies to priority i when bit i of `classEnable` is set. */
export function encodePfc(src: Uint8Array, classEnable: number, pauseTimes: readonly number[]): Uint8Array {
  if (pauseTimes.length !== 8) throw new RangeError(`PFC needs 8 pause times, got ${pauseTimes.length}`);
  const buf = new Uint8Array(ETH_MIN_FRAME);
  let p = writeEthernet(buf, 0, header(src));
  buf[p++] = 0x01;
  buf[p++] = 0x01;
  buf[p++] = 0;
  buf[p++] = classEnable & 0xff;
  for (const t of pauseTimes) {
    buf[p++] = (t >>> 8) & 0xff;
    buf[p++] = t & 0xff;
  }
  return buf;
}

/** Decodes a MAC Control frame, or returns a reason string when it is not one we know. */
export function decodeMacControl(frame: Uint8Array): MacControlFrame | string {
  const e = readEthernet(frame, 0);
  if (!e) return 'truncated Ethernet header';
  if (e.eth.etherType !== EtherType.MAC_CONTROL) return 'not a MAC Control frame';
  const p = e.next;
  if (frame.length < p + 2) return 'truncated MAC Control opcode';
  const op = (frame[p]! << 8) | frame[p + 1]!;
  if (op === MacControlOpcode.PAUSE) {
    if (frame.length < p + 4) return 'truncated PAUSE';
    return { kind: 'pause', src: e.eth.src, pauseTime: (frame[p + 2]! << 8) | frame[p + 3]! };
  }
  if (op === MacControlOpcode.PFC) {
    if (frame.length < p + 20) return 'truncated PFC frame';
    const times: number[] = [];
    for (let i = 0; i < 8; i++) times.push((frame[p + 4 + 2 * i]! << 8) | frame[p + 5 + 2 * i]!);
    return { kind: 'pfc', src: e.eth.src, classEnable: frame[p + 3]!, pauseTimes: times };
  }
  return `unknown MAC Control opcode 0x${op.toString(16).padStart(4, '0')}`;
}

/** Length of one pause quantum in picoseconds at a link rate (512 bit times). */
export function pauseQuantumPs(linkBitsPerSecond: number): number {
  return (512 * 1e12) / linkBitsPerSecond;
}
