import { describe, expect, it } from 'vitest';
import {
  IBV_QPS_ERR,
  IBV_QPS_INIT,
  IBV_QPS_RESET,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPS_SQD,
  IBV_QPS_SQE,
  IBV_QPS_UNKNOWN,
  IBV_QPT_DRIVER,
  IBV_QPT_RAW_PACKET,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_QPT_XRC_RECV,
  IBV_QPT_XRC_SEND,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_ALT_PATH,
  IBV_QP_AV,
  IBV_QP_CAP,
  IBV_QP_CUR_STATE,
  IBV_QP_DEST_QPN,
  IBV_QP_EN_SQD_ASYNC_NOTIFY,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MIG_STATE,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_RATE_LIMIT,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
} from './constants.js';
import { IBV_QP_ATTR_MASK_ALL, QP_STATE_TABLE_QP_TYPES, QP_TRANSITIONS, modifyQpIsOk, qpAttrMaskToString, qpStateName, qpTransitionMasks } from './qp-state.js';

const STATES = [IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE, IBV_QPS_ERR];
const TYPES = QP_STATE_TABLE_QP_TYPES;
const TYPE_NAME: Record<number, string> = {
  [IBV_QPT_RC]: 'RC',
  [IBV_QPT_UC]: 'UC',
  [IBV_QPT_UD]: 'UD',
  [IBV_QPT_RAW_PACKET]: 'RAW_PACKET',
  [IBV_QPT_XRC_SEND]: 'XRC_SEND',
  [IBV_QPT_XRC_RECV]: 'XRC_RECV',
};

function bitsOf(mask: number): number[] {
  const out: number[] = [];
  for (let b = 0; b < 32; b++) {
    const bit = (1 << b) >>> 0;
    if ((mask >>> 0) & bit) out.push(bit);
  }
  return out;
}

// The set of legal (from, to) pairs, transcribed independently of the table
// under test from the kernel's qp_state_table.
const LEGAL: ReadonlyArray<readonly [number, number]> = [
  [IBV_QPS_RESET, IBV_QPS_RESET],
  [IBV_QPS_RESET, IBV_QPS_INIT],
  [IBV_QPS_INIT, IBV_QPS_RESET],
  [IBV_QPS_INIT, IBV_QPS_ERR],
  [IBV_QPS_INIT, IBV_QPS_INIT],
  [IBV_QPS_INIT, IBV_QPS_RTR],
  [IBV_QPS_RTR, IBV_QPS_RESET],
  [IBV_QPS_RTR, IBV_QPS_ERR],
  [IBV_QPS_RTR, IBV_QPS_RTS],
  [IBV_QPS_RTS, IBV_QPS_RESET],
  [IBV_QPS_RTS, IBV_QPS_ERR],
  [IBV_QPS_RTS, IBV_QPS_RTS],
  [IBV_QPS_RTS, IBV_QPS_SQD],
  [IBV_QPS_SQD, IBV_QPS_RESET],
  [IBV_QPS_SQD, IBV_QPS_ERR],
  [IBV_QPS_SQD, IBV_QPS_RTS],
  [IBV_QPS_SQD, IBV_QPS_SQD],
  [IBV_QPS_SQE, IBV_QPS_RESET],
  [IBV_QPS_SQE, IBV_QPS_ERR],
  [IBV_QPS_SQE, IBV_QPS_RTS],
  [IBV_QPS_ERR, IBV_QPS_RESET],
  [IBV_QPS_ERR, IBV_QPS_ERR],
];
const isLegal = (a: number, b: number) => LEGAL.some(([x, y]) => x === a && y === b);

// Required masks of the main path, restated from the kernel table and the
// ibv_modify_qp(3) man page (which agree on these).
const REQUIRED: ReadonlyArray<readonly [number, number, number, number]> = [
  [IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_RC, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS],
  [IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_UC, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS],
  [IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_UD, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY],
  [IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_RAW_PACKET, IBV_QP_PORT],
  [IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_RC, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER],
  [IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_UC, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN],
  [IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_UD, 0],
  [IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_RAW_PACKET, 0],
  [IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_RC, IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_TIMEOUT],
  [IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_UC, IBV_QP_SQ_PSN],
  [IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_UD, IBV_QP_SQ_PSN],
  [IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_RAW_PACKET, 0],
  [IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_XRC_RECV, IBV_QP_TIMEOUT | IBV_QP_SQ_PSN],
];

// A few optional masks, restated from the kernel table.
const OPTIONAL: ReadonlyArray<readonly [number, number, number, number]> = [
  [IBV_QPS_INIT, IBV_QPS_INIT, IBV_QPT_UD, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY],
  [IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_RC, IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX],
  [IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_UD, IBV_QP_PKEY_INDEX | IBV_QP_QKEY],
  [IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_RC, IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE],
  [IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_UD, IBV_QP_CUR_STATE | IBV_QP_QKEY],
  [IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_RAW_PACKET, IBV_QP_RATE_LIMIT],
  [IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPT_RC, IBV_QP_EN_SQD_ASYNC_NOTIFY],
  [IBV_QPS_SQE, IBV_QPS_RTS, IBV_QPT_UC, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS],
  [IBV_QPS_SQE, IBV_QPS_RTS, IBV_QPT_RC, 0],
  [IBV_QPS_RTS, IBV_QPS_ERR, IBV_QPT_RC, 0],
];

// Every (from, to, type) triple that is legal, with its masks.
const CASES = LEGAL.flatMap(([from, to]) =>
  TYPES.map((type) => {
    const m = qpTransitionMasks(from, to, type)!;
    return {
      name: `${TYPE_NAME[type]} ${qpStateName(from)}->${qpStateName(to)}`,
      from,
      to,
      type,
      req: m.req,
      opt: m.opt,
    };
  }),
);

describe('QP state table data', () => {
  it('contains exactly the kernel legal transitions', () => {
    const pairs = QP_TRANSITIONS.map((t) => [t.from, t.to] as const);
    expect(pairs).toHaveLength(LEGAL.length);
    for (const [a, b] of LEGAL) expect(pairs).toContainEqual([a, b]);
  });

  it.each(REQUIRED)('required %s->%s for qp type %s', (from, to, type, req) => {
    expect(qpTransitionMasks(from, to, type)?.req).toBe(req);
  });

  it.each(OPTIONAL)('optional %s->%s for qp type %s', (from, to, type, opt) => {
    expect(qpTransitionMasks(from, to, type)?.opt).toBe(opt);
  });

  it('required and optional masks never overlap and never contain IBV_QP_STATE', () => {
    for (const c of CASES) {
      expect(c.req & c.opt).toBe(0);
      expect((c.req | c.opt) & IBV_QP_STATE).toBe(0);
    }
  });

  it('table objects are frozen', () => {
    expect(Object.isFrozen(QP_TRANSITIONS)).toBe(true);
    expect(Object.isFrozen(QP_TRANSITIONS[1])).toBe(true);
    expect(Object.isFrozen(QP_TRANSITIONS[1]!.req)).toBe(true);
  });
});

describe('modifyQpIsOk: legal transitions', () => {
  it.each(CASES)('$name accepted with exactly its required mask', ({ from, to, type, req }) => {
    expect(modifyQpIsOk(from, to, type, IBV_QP_STATE | req)).toEqual({ ok: true });
  });

  it.each(CASES)('$name accepted with required | optional', ({ from, to, type, req, opt }) => {
    expect(modifyQpIsOk(from, to, type, IBV_QP_STATE | req | opt)).toEqual({ ok: true });
  });

  const withReq = CASES.filter((c) => c.req !== 0);
  it.each(withReq)('$name rejected when any required bit is missing', ({ from, to, type, req, opt }) => {
    for (const bit of bitsOf(req)) {
      const r = modifyQpIsOk(from, to, type, (IBV_QP_STATE | req | opt) & ~bit);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toContain(`missing required attribute(s) ${qpAttrMaskToString(bit)}`);
    }
  });

  it.each(CASES)('$name rejected for each disallowed extra bit', ({ from, to, type, req, opt }) => {
    const allowed = IBV_QP_STATE | req | opt;
    for (let b = 0; b < 32; b++) {
      const bit = (1 << b) >>> 0;
      if (allowed & bit) continue;
      const r = modifyQpIsOk(from, to, type, (IBV_QP_STATE | req | bit) >>> 0);
      expect(r.ok, `bit ${b}`).toBe(false);
      if (!r.ok) {
        const curStateRule = bit === IBV_QP_CUR_STATE && ![IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE].includes(from);
        expect(r.reason).toContain(curStateRule ? 'IBV_QP_CUR_STATE not allowed' : 'not allowed');
      }
    }
  });
});

describe('modifyQpIsOk: illegal transitions', () => {
  const illegal = STATES.flatMap((a) => STATES.filter((b) => !isLegal(a, b)).map((b) => [a, b] as const));

  it('there are 49 - 22 = 27 illegal (from, to) pairs', () => {
    expect(illegal).toHaveLength(27);
  });

  it.each(illegal)('%s->%s rejected for every QP type, even with every attribute', (from, to) => {
    for (const type of TYPES) {
      for (const mask of [IBV_QP_STATE, IBV_QP_STATE | (IBV_QP_ATTR_MASK_ALL & ~IBV_QP_CUR_STATE)]) {
        const r = modifyQpIsOk(from, to, type, mask);
        expect(r.ok).toBe(false);
        if (!r.ok) expect(r.reason).toContain('invalid transition');
      }
    }
  });

  it('RESET->ERR is rejected (kernel behaviour)', () => {
    expect(modifyQpIsOk(IBV_QPS_RESET, IBV_QPS_ERR, IBV_QPT_RC, IBV_QP_STATE)).toEqual({
      ok: false,
      reason: 'invalid transition RESET->ERR',
    });
  });

  it('common mistakes are rejected', () => {
    expect(modifyQpIsOk(IBV_QPS_RESET, IBV_QPS_RTR, IBV_QPT_RC, IBV_QP_STATE).ok).toBe(false);
    expect(modifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTS, IBV_QPT_RC, IBV_QP_STATE).ok).toBe(false);
    expect(modifyQpIsOk(IBV_QPS_ERR, IBV_QPS_INIT, IBV_QPT_UD, IBV_QP_STATE).ok).toBe(false);
    expect(modifyQpIsOk(IBV_QPS_SQE, IBV_QPS_SQD, IBV_QPT_UD, IBV_QP_STATE).ok).toBe(false);
    expect(modifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTR, IBV_QPT_RC, IBV_QP_STATE).ok).toBe(false);
  });
});

describe('modifyQpIsOk: special rules', () => {
  it('IBV_QP_CUR_STATE only from RTR, RTS, SQD, SQE', () => {
    expect(modifyQpIsOk(IBV_QPS_RTS, IBV_QPS_RTS, IBV_QPT_RC, IBV_QP_STATE | IBV_QP_CUR_STATE).ok).toBe(true);
    expect(modifyQpIsOk(IBV_QPS_SQE, IBV_QPS_RTS, IBV_QPT_UD, IBV_QP_STATE | IBV_QP_CUR_STATE).ok).toBe(true);
    const r = modifyQpIsOk(IBV_QPS_INIT, IBV_QPS_INIT, IBV_QPT_RC, IBV_QP_STATE | IBV_QP_CUR_STATE);
    expect(r).toEqual({ ok: false, reason: 'IBV_QP_CUR_STATE not allowed from INIT' });
    // From RTS but not optional for RTS->ERR: rejected by the extra-bit rule.
    const e = modifyQpIsOk(IBV_QPS_RTS, IBV_QPS_ERR, IBV_QPT_RC, IBV_QP_STATE | IBV_QP_CUR_STATE);
    expect(e.ok).toBe(false);
    if (!e.ok) expect(e.reason).toContain('attribute(s) not allowed IBV_QP_CUR_STATE');
  });

  it('without IBV_QP_STATE the call is a cur->cur modify', () => {
    expect(modifyQpIsOk(IBV_QPS_RTS, IBV_QPS_RTS, IBV_QPT_RC, IBV_QP_MIN_RNR_TIMER).ok).toBe(true);
    expect(modifyQpIsOk(IBV_QPS_INIT, IBV_QPS_INIT, IBV_QPT_UD, IBV_QP_QKEY).ok).toBe(true);
    expect(modifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTR, IBV_QPT_RC, IBV_QP_MIN_RNR_TIMER).ok).toBe(false);
    const r = modifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_UD, 0);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain('IBV_QP_STATE not in mask');
  });

  it('IBV_QP_CAP is never accepted by the core table', () => {
    for (const c of CASES) expect((c.req | c.opt) & IBV_QP_CAP).toBe(0);
  });

  it('unknown states and QP types are rejected', () => {
    expect(modifyQpIsOk(IBV_QPS_UNKNOWN, IBV_QPS_ERR, IBV_QPT_RC, IBV_QP_STATE).ok).toBe(false);
    expect(modifyQpIsOk(IBV_QPS_RTS, IBV_QPS_UNKNOWN, IBV_QPT_RC, IBV_QP_STATE).ok).toBe(false);
    expect(modifyQpIsOk(-1, IBV_QPS_ERR, IBV_QPT_RC, IBV_QP_STATE).ok).toBe(false);
    const r = modifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_DRIVER, IBV_QP_STATE | IBV_QP_PORT);
    expect(r).toEqual({ ok: false, reason: 'unsupported QP type 255' });
    expect(modifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, 0, IBV_QP_STATE).ok).toBe(false);
  });

  it('accepts the modify sequence of rc_pingpong', () => {
    const steps: Array<[number, number, number]> = [
      [IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS],
      [
        IBV_QPS_INIT,
        IBV_QPS_RTR,
        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
      ],
      [IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC],
      [IBV_QPS_RTS, IBV_QPS_ERR, IBV_QP_STATE],
      [IBV_QPS_ERR, IBV_QPS_RESET, IBV_QP_STATE],
    ];
    for (const [a, b, m] of steps) expect(modifyQpIsOk(a, b, IBV_QPT_RC, m)).toEqual({ ok: true });
  });

  it('accepts the modify sequence of ud_pingpong', () => {
    expect(modifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_UD, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)).toEqual({ ok: true });
    expect(modifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_UD, IBV_QP_STATE)).toEqual({ ok: true });
    expect(modifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_UD, IBV_QP_STATE | IBV_QP_SQ_PSN)).toEqual({ ok: true });
  });
});

describe('diagnostic helpers', () => {
  it('qpAttrMaskToString names bits and shows unknown ones', () => {
    expect(qpAttrMaskToString(0)).toBe('0');
    expect(qpAttrMaskToString(IBV_QP_STATE | IBV_QP_AV)).toBe('IBV_QP_STATE|IBV_QP_AV');
    expect(qpAttrMaskToString(1 << 22)).toBe('bit 22');
    expect(qpAttrMaskToString((1 << 31) | IBV_QP_RATE_LIMIT)).toBe('IBV_QP_RATE_LIMIT|bit 31');
  });

  it('qpStateName', () => {
    expect(STATES.map(qpStateName)).toEqual(['RESET', 'INIT', 'RTR', 'RTS', 'SQD', 'SQE', 'ERR']);
    expect(qpStateName(9)).toBe('state 9');
  });
});
