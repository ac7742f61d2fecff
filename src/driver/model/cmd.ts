/**
 * Firmware commands from the driver: one mailbox round trip through the
 * context's CommandChannel, with the status mapped to an errno the way a
 * kernel verbs driver maps its firmware's status (cmdStatusToErrno). This is
 * the model provider's `ibv_cmd_*`: every control verb ends up here.
 */
import { errno } from '../../device/abi/constants.js';
import { cmdStatusName, cmdStatusToErrno, CmdStatus, commandByOpcode, syndromeField } from '../../device/commands.js';
import { DeviceError } from '../../device/errors.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ModelContext } from './context.js';

export interface CmdOutcome {
  /** CmdStatus, or -1 when the command could not be issued (bad input, timeout). */
  readonly status: number;
  /** 0 on success, else a positive errno. */
  readonly errno: number;
  readonly out: Record<string, unknown>;
  /** For messages: "MODIFY_QP: BAD_PARAM (field timeout)". */
  readonly what: string;
}

const EMPTY: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

/**
 * Execute one command. Never throws for an expected failure: a status that
 * is not OK, an input value that does not fit its field (EINVAL, nothing is
 * sent), or a device that does not answer (ETIMEDOUT).
 */
export function model_cmd(ctx: ModelContext, opcode: number, values: Readonly<Record<string, unknown>> = EMPTY): CmdOutcome {
  const def = commandByOpcode(opcode);
  const name = def?.name ?? `opcode 0x${opcode.toString(16)}`;
  try {
    const r = ctx.cmd.exec(opcode, values);
    if (r.status === CmdStatus.OK) return { status: r.status, errno: 0, out: r.out, what: name };
    const field = def ? syndromeField(def.input, r.syndrome) : '';
    return {
      status: r.status,
      errno: cmdStatusToErrno(r.status),
      out: EMPTY,
      what: `${name}: ${cmdStatusName(r.status)}${field ? ` (field ${field})` : ''}`,
    };
  } catch (e) {
    if (e instanceof DeviceError || (e as { code?: string } | null)?.code?.startsWith('DEV_ERR_')) {
      const code = (e as DeviceError).code;
      const n = code === 'DEV_ERR_CMD_TIMEOUT' ? errno.ETIMEDOUT : code === 'DEV_ERR_FIELD_RANGE' ? errno.EINVAL : errno.EIO;
      return { status: -1, errno: n, out: EMPTY, what: `${name}: ${(e as Error).message}` };
    }
    throw e;
  }
}

/** model_cmd for verbs that return an object: throws a VerbsError on failure, returns the output. */
export function model_cmd_or_throw(ctx: ModelContext, opcode: number, values: Readonly<Record<string, unknown>>, verb: string): Record<string, unknown> {
  const r = model_cmd(ctx, opcode, values);
  if (r.errno) throw new VerbsError(r.errno, `${verb}: ${r.what}`);
  return r.out;
}
