import { describe, expect, it } from 'vitest';
import { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD } from './abi/constants.js';
import {
  ATOMIC_SEG,
  DATA_SEG,
  RADDR_SEG,
  recvWqeMaxSge,
  recvWqeStride,
  ringEntryAddr,
  SEND_CTRL,
  sendWqeCaps,
  sendWqeDataOffset,
  sendWqeStride,
  UD_SEG,
  WqeOff,
} from './wqe.js';

describe('WQE geometry', () => {
  it('segments tile the fixed send WQE header', () => {
    expect(SEND_CTRL.size).toBe(WqeOff.RADDR - WqeOff.CTRL);
    expect(WqeOff.RADDR + RADDR_SEG.size).toBe(WqeOff.ATOMIC);
    expect(WqeOff.ATOMIC + ATOMIC_SEG.size).toBe(WqeOff.RC_DATA);
    expect(WqeOff.UD + UD_SEG.size).toBe(WqeOff.UD_DATA);
    expect(DATA_SEG.size).toBe(16);
    expect(sendWqeDataOffset(IBV_QPT_UC)).toBe(0x40);
    expect(sendWqeDataOffset(IBV_QPT_UD)).toBe(0x50);
  });

  it('stride = max(64, pow2(H + max(16·sge, roundUp16(4 + inline))))', () => {
    expect(sendWqeStride(IBV_QPT_RC, 0, 0)).toBe(64);
    expect(sendWqeStride(IBV_QPT_RC, 1, 0)).toBe(128);
    expect(sendWqeStride(IBV_QPT_RC, 4, 0)).toBe(128);
    expect(sendWqeStride(IBV_QPT_RC, 5, 0)).toBe(256);
    expect(sendWqeStride(IBV_QPT_RC, 1, 60)).toBe(128);
    expect(sendWqeStride(IBV_QPT_RC, 1, 61)).toBe(256);
    expect(sendWqeStride(IBV_QPT_RC, 32, 400)).toBe(1024);
    expect(sendWqeStride(IBV_QPT_UD, 3, 0)).toBe(128);
    expect(sendWqeStride(IBV_QPT_UD, 4, 0)).toBe(256);
    expect(sendWqeCaps(IBV_QPT_RC, 128)).toEqual({ maxSendSge: 4, maxInlineData: 60 });
    expect(recvWqeStride(1)).toBe(64);
    expect(recvWqeStride(3)).toBe(64);
    expect(recvWqeStride(4)).toBe(128);
    expect(recvWqeMaxSge(128)).toBe(7);
    for (let sge = 0; sge <= 32; sge++) {
      for (const inl of [0, 1, 12, 28, 100, 400]) {
        for (const qpt of [IBV_QPT_RC, IBV_QPT_UD]) {
          const s = sendWqeStride(qpt, sge, inl);
          expect(s & (s - 1)).toBe(0);
          const c = sendWqeCaps(qpt, s);
          expect(c.maxSendSge).toBeGreaterThanOrEqual(sge);
          expect(c.maxInlineData).toBeGreaterThanOrEqual(inl);
        }
      }
    }
  });

  it('ring entry addresses wrap by the ring size', () => {
    expect(ringEntryAddr(0x1_0000_0000, 0, 4, 7)).toBe(0x1_0000_0000);
    expect(ringEntryAddr(0x1_0000_0000, 17, 4, 7)).toBe(0x1_0000_0000 + 128);
    expect(ringEntryAddr(0x1_0000_0000, 0xffffffff, 4, 7)).toBe(0x1_0000_0000 + 15 * 128);
  });
});
