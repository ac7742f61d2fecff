/**
 * The QP state machine: which modify_qp transitions are legal and which
 * attributes each one requires or allows, per QP type.
 *
 * This is the Linux core's `qp_state_table` / `ib_modify_qp_is_ok`
 * (drivers/infiniband/core/verbs.c, read at torvalds/linux f4d8f354, and
 * checked against an older v4.x copy; the two agree except that the newer
 * one allows IBV_QP_RATE_LIMIT on RAW_PACKET RTR->RTS and RTS->RTS). It is
 * restated here as data; the logic of modifyQpIsOk follows the kernel's
 * order of checks.
 *
 * Both sides use it: the device firmware (which enforces the state machine
 * on MODIFY_QP mailbox commands) and the verbs driver (which can reject a bad
 * ibv_modify_qp early with EINVAL). Keep this file pure: no imports besides
 * constants.ts, no state.
 *
 * QP types covered: RC, UC, UD, RAW_PACKET, XRC_SEND (kernel XRC_INI) and
 * XRC_RECV (kernel XRC_TGT). The kernel-only SMI/GSI types (0, 1) have no
 * libibverbs value; IBV_QPT_DRIVER and anything else is rejected here
 * (the kernel would index its table with them and find empty masks).
 *
 * RESET -> ERR (sources differ):
 *  - SPEC-DIGEST §4.8 / §8.7 report a "uverbs table" that allows RESET->ERR.
 *  - The ibv_modify_qp(3) man page lists only the attributes required on
 *    RESET->INIT->RTR->RTS and says nothing either way about RESET->ERR.
 *  - The kernel table, in both copies read, lists from RESET only
 *    RESET->RESET and RESET->INIT. Drivers that call ib_modify_qp_is_ok
 *    (mlx4, mlx5, rxe, ...) therefore fail RESET->ERR with EINVAL; an ipoib
 *    patch (2012, "Move QP to ERROR only when the QP is not at RESET state")
 *    exists precisely because that call fails.
 *  We follow the kernel's current behaviour: RESET->ERR is rejected.
 *
 * Modify without IBV_QP_STATE: the kernel (and rxe/mlx5) take
 * next = attr_mask & IBV_QP_STATE ? attr.qp_state : cur, so such a call is a
 * cur->cur transition (legal for INIT, RTS, SQD, and for RESET/ERR with no
 * other attribute). modifyQpIsOk therefore always permits IBV_QP_STATE, and
 * when it is absent insists that next === cur.
 */

import {
  IBV_QPS_RESET,
  IBV_QPS_INIT,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPS_SQD,
  IBV_QPS_SQE,
  IBV_QPS_ERR,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_QPT_RAW_PACKET,
  IBV_QPT_XRC_SEND,
  IBV_QPT_XRC_RECV,
  IBV_QP_STATE,
  IBV_QP_CUR_STATE,
  IBV_QP_EN_SQD_ASYNC_NOTIFY,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_AV,
  IBV_QP_PATH_MTU,
  IBV_QP_TIMEOUT,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_ALT_PATH,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_SQ_PSN,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_PATH_MIG_STATE,
  IBV_QP_DEST_QPN,
  IBV_QP_RATE_LIMIT,
  IBV_QP_ATTR_MASK_NAMES,
} from './constants.js';

/** Required and optional attribute masks of one transition for one QP type. */
export interface QpTransitionMasks {
  readonly req: number;
  readonly opt: number;
}

/** QP types this table knows, in a fixed order. */
export const QP_STATE_TABLE_QP_TYPES: readonly number[] = Object.freeze([
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_QPT_RAW_PACKET,
  IBV_QPT_XRC_SEND,
  IBV_QPT_XRC_RECV,
]);

/** One legal transition: masks per QP type. A type not listed has req = opt = 0. */
export interface QpTransition {
  readonly from: number;
  readonly to: number;
  readonly req: Readonly<Partial<Record<number, number>>>;
  readonly opt: Readonly<Partial<Record<number, number>>>;
}

// Attribute groups that recur in the table, named for readability.
const INIT_ATTRS_CONNECTED = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
const INIT_ATTRS_UD = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;

const RTR_REQ_UC = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
const RTR_REQ_RC = RTR_REQ_UC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
const RTR_OPT_CONNECTED = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;

const RTS_REQ_RC = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

/** Optional on RTR->RTS, RTS->RTS and SQD->RTS (order of bits is irrelevant). */
const TO_RTS_OPT_UD = IBV_QP_CUR_STATE | IBV_QP_QKEY;
const TO_RTS_OPT_UC = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE;
const TO_RTS_OPT_RC = TO_RTS_OPT_UC | IBV_QP_MIN_RNR_TIMER;
/** The optional masks per QP type into RTS (SQD->RTS), and with RAW_PACKET's rate limit (RTR->RTS, RTS->RTS). */
const TO_RTS_OPTIONAL: Partial<Record<number, number>> = {
  [IBV_QPT_UD]: TO_RTS_OPT_UD,
  [IBV_QPT_UC]: TO_RTS_OPT_UC,
  [IBV_QPT_RC]: TO_RTS_OPT_RC,
  [IBV_QPT_XRC_SEND]: TO_RTS_OPT_UC,
  [IBV_QPT_XRC_RECV]: TO_RTS_OPT_RC,
};
const TO_RTS_OPTIONAL_RAW: Partial<Record<number, number>> = { ...TO_RTS_OPTIONAL, [IBV_QPT_RAW_PACKET]: IBV_QP_RATE_LIMIT };

const NONE = Object.freeze({}) as Readonly<Partial<Record<number, number>>>;

function t(from: number, to: number, req: Partial<Record<number, number>>, opt: Partial<Record<number, number>>): QpTransition {
  return Object.freeze({ from, to, req: Object.freeze(req), opt: Object.freeze(opt) });
}

/**
 * Every legal transition. Anything not listed is invalid. Read it as the
 * kernel table restated in libibverbs names (XRC_SEND = kernel XRC_INI,
 * XRC_RECV = kernel XRC_TGT).
 */
export const QP_TRANSITIONS: readonly QpTransition[] = Object.freeze([
  // --- from RESET: only RESET and INIT (no RESET->ERR; see header) ---
  t(IBV_QPS_RESET, IBV_QPS_RESET, NONE, NONE),
  t(
    IBV_QPS_RESET,
    IBV_QPS_INIT,
    {
      [IBV_QPT_UD]: INIT_ATTRS_UD,
      [IBV_QPT_RAW_PACKET]: IBV_QP_PORT,
      [IBV_QPT_UC]: INIT_ATTRS_CONNECTED,
      [IBV_QPT_RC]: INIT_ATTRS_CONNECTED,
      [IBV_QPT_XRC_SEND]: INIT_ATTRS_CONNECTED,
      [IBV_QPT_XRC_RECV]: INIT_ATTRS_CONNECTED,
    },
    {},
  ),

  // --- from INIT ---
  t(IBV_QPS_INIT, IBV_QPS_RESET, NONE, NONE),
  t(IBV_QPS_INIT, IBV_QPS_ERR, NONE, NONE),
  t(
    IBV_QPS_INIT,
    IBV_QPS_INIT,
    {},
    {
      [IBV_QPT_UD]: INIT_ATTRS_UD,
      [IBV_QPT_UC]: INIT_ATTRS_CONNECTED,
      [IBV_QPT_RC]: INIT_ATTRS_CONNECTED,
      [IBV_QPT_XRC_SEND]: INIT_ATTRS_CONNECTED,
      [IBV_QPT_XRC_RECV]: INIT_ATTRS_CONNECTED,
    },
  ),
  t(
    IBV_QPS_INIT,
    IBV_QPS_RTR,
    {
      [IBV_QPT_UC]: RTR_REQ_UC,
      [IBV_QPT_RC]: RTR_REQ_RC,
      [IBV_QPT_XRC_SEND]: RTR_REQ_UC,
      [IBV_QPT_XRC_RECV]: RTR_REQ_RC,
    },
    {
      [IBV_QPT_UD]: IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
      [IBV_QPT_UC]: RTR_OPT_CONNECTED,
      [IBV_QPT_RC]: RTR_OPT_CONNECTED,
      [IBV_QPT_XRC_SEND]: RTR_OPT_CONNECTED,
      [IBV_QPT_XRC_RECV]: RTR_OPT_CONNECTED,
    },
  ),

  // --- from RTR ---
  t(IBV_QPS_RTR, IBV_QPS_RESET, NONE, NONE),
  t(IBV_QPS_RTR, IBV_QPS_ERR, NONE, NONE),
  t(
    IBV_QPS_RTR,
    IBV_QPS_RTS,
    {
      [IBV_QPT_UD]: IBV_QP_SQ_PSN,
      [IBV_QPT_UC]: IBV_QP_SQ_PSN,
      [IBV_QPT_RC]: RTS_REQ_RC,
      [IBV_QPT_XRC_SEND]: RTS_REQ_RC,
      [IBV_QPT_XRC_RECV]: IBV_QP_TIMEOUT | IBV_QP_SQ_PSN,
    },
    TO_RTS_OPTIONAL_RAW,
  ),

  // --- from RTS ---
  t(IBV_QPS_RTS, IBV_QPS_RESET, NONE, NONE),
  t(IBV_QPS_RTS, IBV_QPS_ERR, NONE, NONE),
  t(IBV_QPS_RTS, IBV_QPS_RTS, {}, TO_RTS_OPTIONAL_RAW),
  t(
    IBV_QPS_RTS,
    IBV_QPS_SQD,
    {},
    {
      [IBV_QPT_UD]: IBV_QP_EN_SQD_ASYNC_NOTIFY,
      [IBV_QPT_UC]: IBV_QP_EN_SQD_ASYNC_NOTIFY,
      [IBV_QPT_RC]: IBV_QP_EN_SQD_ASYNC_NOTIFY,
      [IBV_QPT_XRC_SEND]: IBV_QP_EN_SQD_ASYNC_NOTIFY,
      [IBV_QPT_XRC_RECV]: IBV_QP_EN_SQD_ASYNC_NOTIFY,
    },
  ),

  // --- from SQD ---
  t(IBV_QPS_SQD, IBV_QPS_RESET, NONE, NONE),
  t(IBV_QPS_SQD, IBV_QPS_ERR, NONE, NONE),
  t(IBV_QPS_SQD, IBV_QPS_RTS, {}, TO_RTS_OPTIONAL),
  t(
    IBV_QPS_SQD,
    IBV_QPS_SQD,
    {},
    {
      [IBV_QPT_UD]: IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
      [IBV_QPT_UC]: IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE,
      [IBV_QPT_RC]:
        IBV_QP_PORT |
        IBV_QP_AV |
        IBV_QP_TIMEOUT |
        IBV_QP_RETRY_CNT |
        IBV_QP_RNR_RETRY |
        IBV_QP_MAX_QP_RD_ATOMIC |
        IBV_QP_MAX_DEST_RD_ATOMIC |
        IBV_QP_ALT_PATH |
        IBV_QP_ACCESS_FLAGS |
        IBV_QP_PKEY_INDEX |
        IBV_QP_MIN_RNR_TIMER |
        IBV_QP_PATH_MIG_STATE,
      [IBV_QPT_XRC_SEND]:
        IBV_QP_PORT |
        IBV_QP_AV |
        IBV_QP_TIMEOUT |
        IBV_QP_RETRY_CNT |
        IBV_QP_RNR_RETRY |
        IBV_QP_MAX_QP_RD_ATOMIC |
        IBV_QP_ALT_PATH |
        IBV_QP_ACCESS_FLAGS |
        IBV_QP_PKEY_INDEX |
        IBV_QP_PATH_MIG_STATE,
      [IBV_QPT_XRC_RECV]:
        IBV_QP_PORT |
        IBV_QP_AV |
        IBV_QP_TIMEOUT |
        IBV_QP_MAX_DEST_RD_ATOMIC |
        IBV_QP_ALT_PATH |
        IBV_QP_ACCESS_FLAGS |
        IBV_QP_PKEY_INDEX |
        IBV_QP_MIN_RNR_TIMER |
        IBV_QP_PATH_MIG_STATE,
    },
  ),

  // --- from SQE (SQ error): SQE->RTS is legal for every type, but only UD
  //     and UC may pass attributes with it ---
  t(IBV_QPS_SQE, IBV_QPS_RESET, NONE, NONE),
  t(IBV_QPS_SQE, IBV_QPS_ERR, NONE, NONE),
  t(
    IBV_QPS_SQE,
    IBV_QPS_RTS,
    {},
    {
      [IBV_QPT_UD]: IBV_QP_CUR_STATE | IBV_QP_QKEY,
      [IBV_QPT_UC]: IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
    },
  ),

  // --- from ERR ---
  t(IBV_QPS_ERR, IBV_QPS_RESET, NONE, NONE),
  t(IBV_QPS_ERR, IBV_QPS_ERR, NONE, NONE),
]);

const NUM_STATES = IBV_QPS_ERR + 1;

/** Dense lookup [from][to] built once from QP_TRANSITIONS. */
const BY_STATES: ReadonlyArray<ReadonlyArray<QpTransition | undefined>> = (() => {
  const m: Array<Array<QpTransition | undefined>> = [];
  for (let i = 0; i < NUM_STATES; i++) m.push(new Array<QpTransition | undefined>(NUM_STATES).fill(undefined));
  for (const tr of QP_TRANSITIONS) m[tr.from]![tr.to] = tr;
  return m;
})();

const KNOWN_QP_TYPES = new Set<number>(QP_STATE_TABLE_QP_TYPES);

/** Every bit of ibv_qp_attr_mask that libibverbs defines. */
export const IBV_QP_ATTR_MASK_ALL: number = IBV_QP_ATTR_MASK_NAMES.reduce((acc, [bit]) => acc | bit, 0);

const STATE_NAMES = Object.freeze(['RESET', 'INIT', 'RTR', 'RTS', 'SQD', 'SQE', 'ERR', 'UNKNOWN']);

function isState(s: number): boolean {
  return Number.isInteger(s) && s >= IBV_QPS_RESET && s <= IBV_QPS_ERR;
}

/** "RTS" for IBV_QPS_RTS; "state N" for anything else. */
export function qpStateName(state: number): string {
  return Number.isInteger(state) && state >= 0 && state < STATE_NAMES.length ? STATE_NAMES[state]! : `state ${state}`;
}

/** "IBV_QP_AV|IBV_QP_PATH_MTU" for a mask; unknown bits appear as "bit N". */
export function qpAttrMaskToString(mask: number): string {
  const parts: string[] = [];
  let rest = mask >>> 0;
  for (const [bit, name] of IBV_QP_ATTR_MASK_NAMES) {
    if (rest & bit) {
      parts.push(name);
      rest &= ~bit;
    }
  }
  for (let b = 0; b < 32 && rest !== 0; b++) {
    const bit = (1 << b) >>> 0;
    if (rest & bit) {
      parts.push(`bit ${b}`);
      rest = (rest & ~bit) >>> 0;
    }
  }
  return parts.length ? parts.join('|') : '0';
}

/**
 * The required / optional masks of a transition for a QP type, or null when
 * the transition is not legal (or the QP type / a state is unknown).
 * IBV_QP_STATE is in neither mask: it is always permitted.
 */
export function qpTransitionMasks(cur: number, next: number, qpType: number): QpTransitionMasks | null {
  if (!isState(cur) || !isState(next) || !KNOWN_QP_TYPES.has(qpType)) return null;
  const tr = BY_STATES[cur]![next];
  if (!tr) return null;
  return { req: tr.req[qpType] ?? 0, opt: tr.opt[qpType] ?? 0 };
}

export type ModifyQpCheck = { ok: true } | { ok: false; reason: string };

/**
 * `ib_modify_qp_is_ok`: may a QP of type `qpType` in state `cur` be modified
 * with `mask` into state `next`? The checks, in the kernel's order:
 *  1. IBV_QP_CUR_STATE is only accepted when cur is RTR, RTS, SQD or SQE;
 *  2. the transition must be in the table;
 *  3. every required attribute must be in the mask;
 *  4. no bit outside required | optional | IBV_QP_STATE may be set.
 * Plus the two checks the kernel leaves to its callers: states and QP type
 * must be known, and without IBV_QP_STATE next must equal cur.
 * A rejection is EINVAL for ibv_modify_qp.
 */
export function modifyQpIsOk(cur: number, next: number, qpType: number, mask: number): ModifyQpCheck {
  if (!isState(cur)) return { ok: false, reason: `invalid current state ${cur}` };
  if (!isState(next)) return { ok: false, reason: `invalid target state ${next}` };
  if (!KNOWN_QP_TYPES.has(qpType)) return { ok: false, reason: `unsupported QP type ${qpType}` };
  const m = mask >>> 0;
  if (!(m & IBV_QP_STATE) && next !== cur) {
    return {
      ok: false,
      reason: `IBV_QP_STATE not in mask but target ${qpStateName(next)} differs from current ${qpStateName(cur)}`,
    };
  }
  if (m & IBV_QP_CUR_STATE && cur !== IBV_QPS_RTR && cur !== IBV_QPS_RTS && cur !== IBV_QPS_SQD && cur !== IBV_QPS_SQE) {
    return { ok: false, reason: `IBV_QP_CUR_STATE not allowed from ${qpStateName(cur)}` };
  }
  const masks = qpTransitionMasks(cur, next, qpType);
  if (!masks) {
    return { ok: false, reason: `invalid transition ${qpStateName(cur)}->${qpStateName(next)}` };
  }
  const missing = masks.req & ~m;
  if (missing) {
    return {
      ok: false,
      reason: `missing required attribute(s) ${qpAttrMaskToString(missing)} for ${qpStateName(cur)}->${qpStateName(next)}`,
    };
  }
  const extra = (m & ~(masks.req | masks.opt | IBV_QP_STATE)) >>> 0;
  if (extra) {
    return {
      ok: false,
      reason: `attribute(s) not allowed ${qpAttrMaskToString(extra)} for ${qpStateName(cur)}->${qpStateName(next)}`,
    };
  }
  return { ok: true };
}
