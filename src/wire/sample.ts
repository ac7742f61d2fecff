/**
 * One frame of every opcode in every framing, plus CNPs, PFC and PAUSE
 * frames: a capture anyone can open in Wireshark to see what the model
 * puts on the wire. Deterministic: same bytes on every run.
 */
import { newPacket } from './build.js';
import { encodePause, encodePfc } from './mac-control.js';
import { Hdr, OPCODES, type OpcodeInfo, Transport } from './opcodes.js';
import { encodePacket, type Framing, type Packet } from './packet.js';
import { parseIpv6 } from './ip.js';
import { Syndrome } from './transport.js';

export interface SampleFrame {
  /** What the frame is, e.g. 'roce-v2/ipv4 RC_SEND_FIRST'. */
  label: string;
  framing: Framing | 'mac-control';
  /** For RDMA frames: the packet as built. */
  packet: Packet | null;
  /** For PFC frames: the per-priority pause times and enable vector. */
  pfc: { classEnable: number; pauseTimes: number[] } | null;
  /** For 802.3x PAUSE. */
  pauseTime: number | null;
  bytes: Uint8Array;
}

const FRAMINGS: readonly { framing: Framing; ipVersion?: 4 | 6; tag: string }[] = [
  { framing: 'roce-v2', ipVersion: 4, tag: 'roce-v2/ipv4' },
  { framing: 'roce-v2', ipVersion: 6, tag: 'roce-v2/ipv6' },
  { framing: 'roce-v1', tag: 'roce-v1' },
  { framing: 'ib', tag: 'ib' },
];

/** Opcodes the model speaks: every RC, UC and UD opcode. */
export function modelOpcodes(): OpcodeInfo[] {
  return OPCODES.filter((i): i is OpcodeInfo => !!i && (i.transport === Transport.RC || i.transport === Transport.UC || i.transport === Transport.UD));
}

function payloadFor(info: OpcodeInfo, seq: number): Uint8Array {
  if (!info.payload) return new Uint8Array(0);
  if (info.kind === 'atomic-write') return Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8);
  // Lengths that exercise every pad count; bytes that spell where they came from.
  const len = 13 + (seq % 4) * 7;
  const p = new Uint8Array(len);
  for (let i = 0; i < len; i++) p[i] = (0x41 + ((seq + i) % 26)) & 0xff;
  return p;
}

function fillHeaders(p: Packet, info: OpcodeInfo, seq: number): void {
  if (p.reth)
    p.reth = { va: 0x7f00_0000_1000n + BigInt(seq) * 0x1000n, rkey: 0x1234_0000 + seq, dmaLength: info.kind === 'read-request' ? 4096 : p.payload.length };
  if (p.atomicEth)
    p.atomicEth = {
      va: 0x7f00_0000_2000n + BigInt(seq) * 8n,
      rkey: 0x5678_0000 + seq,
      swapAdd: 0x1111_2222_3333_4444n,
      compare: info.op === 0x13 ? 0x0123_4567_89ab_cdefn : 0n,
    };
  if (p.aeth)
    p.aeth = {
      syndrome:
        info.kind === 'ack' && seq % 3 === 1
          ? Syndrome.NAK_PSN_SEQ_ERR
          : info.kind === 'ack' && seq % 3 === 2
            ? Syndrome.RNR_NAK_BASE | 14
            : Syndrome.ACK_UNLIMITED,
      msn: 100 + seq,
    };
  if (p.atomicAckEth) p.atomicAckEth = { origData: 0xfeed_face_cafe_beefn };
  if (p.deth) p.deth = { qkey: info.transport === Transport.UD ? 0x1111_1111 : 0, resv8: 0, srcQp: 0x000abc };
  if (p.immDt !== null) p.immDt = 0xdead_beef;
  if (p.ieth !== null) p.ieth = 0x0000_4242;
  if (info.headers & Hdr.FETH) p.feth = { raw: 0x11 };
}

/** Every sample frame, in capture order. */
export function sampleFrames(): SampleFrame[] {
  const out: SampleFrame[] = [];
  let seq = 0;
  for (const f of FRAMINGS) {
    for (const info of modelOpcodes()) {
      const v6src = parseIpv6('fd00:1::1');
      const v6dst = parseIpv6('fd00:1::2');
      const p = newPacket(f.framing, info.code, {
        ipVersion: f.ipVersion ?? 4,
        ...(f.ipVersion === 6 ? { srcIp: v6src, dstIp: v6dst, flowLabel: 0x12345 } : {}),
        ...(f.framing === 'ib' ? { global: seq % 2 === 0 } : {}),
        ipId: seq,
        psn: (0xfffff0 + seq) & 0xffffff,
        destQp: 0x000011 + (seq % 5),
        ackReq: info.isRequest && (info.position === 2 || info.position === 3 || info.position === 4) ? 1 : 0,
        se: info.consumesRecvWqe ? 1 : 0,
        udpSrcPort: 0xc132,
        payload: payloadFor(info, seq),
      });
      fillHeaders(p, info, seq);
      out.push({ label: `${f.tag} ${info.name}`, framing: f.framing, packet: p, pfc: null, pauseTime: null, bytes: encodePacket(p) });
      seq++;
    }
    if (f.framing === 'roce-v2') {
      const cnp = newPacket('roce-v2', 0x81, {
        ipVersion: f.ipVersion ?? 4,
        dscp: 48,
        ecn: 2,
        udpSrcPort: 0,
        destQp: 0x118,
        ipId: seq,
        ...(f.ipVersion === 6 ? { srcIp: parseIpv6('fd00:1::2'), dstIp: parseIpv6('fd00:1::1') } : {}),
      });
      out.push({ label: `${f.tag} CNP`, framing: 'roce-v2', packet: cnp, pfc: null, pauseTime: null, bytes: encodePacket(cnp) });
      seq++;
    }
  }
  const mac = Uint8Array.of(0x02, 0x00, 0x00, 0x00, 0x00, 0x01);
  const pfcCases: { classEnable: number; pauseTimes: number[] }[] = [
    { classEnable: 0x08, pauseTimes: [0, 0, 0, 0xffff, 0, 0, 0, 0] },
    { classEnable: 0x08, pauseTimes: [0, 0, 0, 0, 0, 0, 0, 0] },
    { classEnable: 0xff, pauseTimes: [1, 2, 3, 4, 0x100, 0x200, 0x8000, 0xffff] },
  ];
  for (const c of pfcCases) {
    out.push({
      label: `PFC enable=0x${c.classEnable.toString(16)}`,
      framing: 'mac-control',
      packet: null,
      pfc: c,
      pauseTime: null,
      bytes: encodePfc(mac, c.classEnable, c.pauseTimes),
    });
  }
  out.push({ label: '802.3x PAUSE', framing: 'mac-control', packet: null, pfc: null, pauseTime: 0x1234, bytes: encodePause(mac, 0x1234) });
  return out;
}
