/**
 * The command mailbox: how the driver hands a firmware command to the
 * device and gets its result.
 *
 * A mailbox is one 4 KiB page of host memory (4096-byte aligned):
 *   0x000  header (MAILBOX_HDR): opcode, token, lengths, status, syndrome
 *   0x040  input structure of the command (≤ 1984 bytes)
 *   0x800  output structure (≤ 2048 bytes), written by the device
 *
 * Protocol (one command at a time per device; the driver serializes):
 *  driver  1. write the header (opcode, token, inputLength) and the input;
 *          2. Atomics.store CMD_ADDR_LO / CMD_ADDR_HI = mailbox address;
 *          3. Atomics.store CMD_DOORBELL = token (1..0xffff, different from the
 *             last token served, i.e. from CMD_STATUS >>> 8);
 *          4. set DB_SUMMARY bit CMD, bump DB_SEQ, notify (registers.ringKind);
 *          5. wait until CMD_STATUS >>> 8 == token (Atomics.wait on CMD_STATUS
 *             in the realtime runtime; in the simulator the runtime has already
 *             executed it inline), then read status, syndrome and output.
 *  device  reads CMD_DOORBELL; if it is a token it has not served, reads the
 *          address, executes the command (executeCommand), writes output,
 *          status and syndrome into the mailbox, then Atomics.store
 *          CMD_STATUS = (token << 8) | status and Atomics.notify(CMD_STATUS).
 * The mailbox bytes are published by the CMD_DOORBELL store (driver → device)
 * and by the CMD_STATUS store (device → driver).
 */
import { CmdStatus, commandByOpcode, CommandFailure, fieldSyndrome, cmdStatusName } from './commands.js';
import { DeviceError } from './errors.js';
import type { Firmware } from './firmware.js';
import type { HostMemory } from './host-memory.js';
import { decodeStruct, defineLayout, encodeStruct, reserved, u, type Layout } from './layout.js';
import { DbKind, Reg, ringKind, type Bar } from './registers.js';
import { fillBytes } from './fill-bytes.js';

/** The web platform's clock (Node has it as a global too); this folder takes no Node types. */
declare const performance: { now(): number };

export const MAILBOX_SIZE = 4096;
export const MAILBOX_IN_OFFSET = 0x40;
export const MAILBOX_OUT_OFFSET = 0x800;
export const MAILBOX_MAX_IN = MAILBOX_OUT_OFFSET - MAILBOX_IN_OFFSET;
export const MAILBOX_MAX_OUT = MAILBOX_SIZE - MAILBOX_OUT_OFFSET;

export const MAILBOX_HDR = defineLayout('mailbox-header', 0x40, 'Mailbox page header (offset 0 of the 4 KiB mailbox page).', [
  u('opcode', 0x00, 0, 16, 'command opcode (driver)'),
  reserved(0x02, 16),
  u('token', 0x04, 0, 16, 'token of this command, 1..0xffff (driver); echoed in CMD_STATUS'),
  reserved(0x06, 16),
  u('inputLength', 0x08, 0, 32, 'bytes of input at 0x40 (driver): at least the input structure size'),
  u('outputLength', 0x0c, 0, 32, 'bytes of output at 0x800 (device)'),
  u('status', 0x10, 0, 8, 'CmdStatus (device)'),
  reserved(0x11, 24),
  u('syndrome', 0x14, 0, 32, 'detail (device): 1 + bit position of the offending input field, 0 if none'),
  reserved(0x18, 320),
]);

export interface CommandResult {
  readonly status: number;
  readonly syndrome: number;
}

function failWith(fw: Firmware, hdr: DataView, status: number, syndrome: number, msg: string): CommandResult {
  fw.lastError = msg;
  MAILBOX_HDR.f.status.set(hdr, 0, status);
  MAILBOX_HDR.f.syndrome.set(hdr, 0, syndrome);
  MAILBOX_HDR.f.outputLength.set(hdr, 0, 0);
  return { status, syndrome };
}

/**
 * Execute the command in `mailbox` (a view of the 4 KiB mailbox page) on
 * `fw`. Writes output, status and syndrome into the page and returns them.
 * A plain function: the realtime device thread calls it from
 * serviceCommandDoorbell, the simulator inline.
 */
export function executeCommand(fw: Firmware, mailbox: Uint8Array): CommandResult {
  const dv = new DataView(mailbox.buffer, mailbox.byteOffset, MAILBOX_SIZE);
  const opcode = MAILBOX_HDR.f.opcode.get(dv, 0);
  const def = commandByOpcode(opcode);
  if (!def) return failWith(fw, dv, CmdStatus.BAD_OPCODE, 0, `unknown opcode 0x${opcode.toString(16)}`);
  const inLen = MAILBOX_HDR.f.inputLength.get(dv, 0);
  if (inLen < def.input.size || inLen > MAILBOX_MAX_IN) {
    return failWith(fw, dv, CmdStatus.BAD_INPUT_LEN, 0, `${def.name}: inputLength ${inLen}, needs ${def.input.size}..${MAILBOX_MAX_IN}`);
  }
  fillBytes(mailbox, 0, MAILBOX_OUT_OFFSET, MAILBOX_SIZE);
  const input = decodeStruct(def.input, dv, MAILBOX_IN_OFFSET) as Record<string, unknown>;
  let out: Record<string, unknown> | void;
  try {
    out = def.run(fw, input);
  } catch (e) {
    if (e instanceof CommandFailure) {
      return failWith(fw, dv, e.status, fieldSyndrome(def.input, e.field), `${def.name}: ${e.message}`);
    }
    const msg = e instanceof Error ? e.message : String(e);
    return failWith(fw, dv, CmdStatus.INTERNAL_ERR, 0, `${def.name}: internal error: ${msg}`);
  }
  if (def.output && out) encodeStruct(def.output, dv, MAILBOX_OUT_OFFSET, out as never);
  fw.lastError = '';
  MAILBOX_HDR.f.status.set(dv, 0, CmdStatus.OK);
  MAILBOX_HDR.f.syndrome.set(dv, 0, 0);
  MAILBOX_HDR.f.outputLength.set(dv, 0, def.output ? def.output.size : 0);
  return { status: CmdStatus.OK, syndrome: 0 };
}

// ---------------------------------------------------------------------------
// Device side: the BAR handshake
// ---------------------------------------------------------------------------

/**
 * Serve the command doorbell if it carries a new token: read the mailbox
 * address from the BAR, execute, publish CMD_STATUS. Returns true if a
 * command was executed. A mailbox outside host memory completes with
 * INTERNAL_ERR (nothing is written to memory).
 */
/** The token the driver rang the command doorbell with, if the firmware has not executed it yet; else 0. */
function pendingToken(fw: Firmware, bar: Bar): number {
  const token = Atomics.load(bar.i32, Reg.CMD_DOORBELL) & 0xffff;
  return token === fw.lastToken ? 0 : token;
}

/** True when the driver has rung the command doorbell with a token the firmware has not executed yet. */
export function commandPending(fw: Firmware, bar: Bar): boolean {
  return pendingToken(fw, bar) !== 0;
}

export function serviceCommandDoorbell(fw: Firmware, bar: Bar): boolean {
  const r = bar.i32;
  const token = pendingToken(fw, bar);
  if (token === 0) return false;
  fw.lastToken = token;
  const addr = (Atomics.load(r, Reg.CMD_ADDR_HI) >>> 0) * 4294967296 + (Atomics.load(r, Reg.CMD_ADDR_LO) >>> 0);
  let status: number;
  if (!fw.mem.inRangeN(addr, MAILBOX_SIZE) || addr % MAILBOX_SIZE !== 0) {
    fw.lastError = `mailbox 0x${addr.toString(16)} is not an aligned page of host memory`;
    status = CmdStatus.INTERNAL_ERR;
  } else {
    status = executeCommand(fw, fw.mem.dmaViewN(addr, MAILBOX_SIZE)).status;
  }
  Atomics.store(r, Reg.CMD_STATUS, (token << 8) | status);
  Atomics.notify(r, Reg.CMD_STATUS);
  return true;
}

// ---------------------------------------------------------------------------
// Driver side
// ---------------------------------------------------------------------------

/**
 * Fill a mailbox page: header (opcode, token, inputLength = the input
 * structure's size) and the input fields (range-checked; unset fields 0).
 */
export function writeCommand(mailbox: Uint8Array, opcode: number, token: number, input: Layout, values: Readonly<Record<string, unknown>>): void {
  const dv = new DataView(mailbox.buffer, mailbox.byteOffset, MAILBOX_SIZE);
  fillBytes(mailbox, 0, 0, MAILBOX_OUT_OFFSET);
  encodeStruct(MAILBOX_HDR, dv, 0, { opcode, token, inputLength: input.size });
  encodeStruct(input, dv, MAILBOX_IN_OFFSET, values as never);
}

/** Read status, syndrome and (when OK) the decoded output from a mailbox page. */
export function readCommandResult(mailbox: Uint8Array, output: Layout | null): CommandResult & { out: Record<string, unknown> } {
  const dv = new DataView(mailbox.buffer, mailbox.byteOffset, MAILBOX_SIZE);
  const status = MAILBOX_HDR.f.status.get(dv, 0);
  const syndrome = MAILBOX_HDR.f.syndrome.get(dv, 0);
  const out = status === CmdStatus.OK && output ? (decodeStruct(output, dv, MAILBOX_OUT_OFFSET) as Record<string, unknown>) : {};
  return { status, syndrome, out };
}

/** Steps 2–4: point the BAR at the mailbox and ring the command doorbell. */
export function postCommand(bar: Bar, mailboxAddr: number, token: number): void {
  const r = bar.i32;
  Atomics.store(r, Reg.CMD_ADDR_LO, mailboxAddr >>> 0);
  Atomics.store(r, Reg.CMD_ADDR_HI, Math.floor(mailboxAddr / 4294967296) | 0);
  Atomics.store(r, Reg.CMD_DOORBELL, token & 0xffff);
  ringKind(bar, DbKind.CMD);
}

/** Has the command with `token` completed? Returns its status, or -1 if not yet. */
export function pollCommand(bar: Bar, token: number): number {
  const v = Atomics.load(bar.i32, Reg.CMD_STATUS);
  return v >>> 8 === (token & 0xffff) ? v & 0xff : -1;
}

/**
 * How long a waiting driver polls CMD_STATUS before it sleeps, and when it
 * tries polling again. A sleeping thread wakes ~30-50 µs after the device's
 * notify, while a command the device picks up at once is served in a few
 * µs; but when the device thread has no core of its own (workers 1 on a
 * busy 2-core machine) a spinning driver only delays it. So the spin adapts,
 * as an adaptive mutex's does: a spin that finds the result keeps spinning
 * on; one that does not makes the next commands sleep at once, 1, 2, 4 ...
 * up to 64 of them before the next try.
 */
export class CommandSpin {
  /** Longest spin, ns: about one sleep's wake-up, past which sleeping costs less. */
  static readonly MAX_NS = 40_000;
  /** Commands left to wait for without spinning. */
  private skip = 0;
  /** What `skip` becomes after the next spin that finds nothing. */
  private backoff = 1;

  /** Should this wait spin first? */
  shouldSpin(): boolean {
    if (this.skip === 0) return true;
    this.skip--;
    return false;
  }

  /** The spin found the status set. */
  found(): void {
    this.backoff = 1;
  }

  /** The spin ran out: sleep at once for the next `backoff` commands. */
  missed(): void {
    this.skip = this.backoff;
    this.backoff = Math.min(64, this.backoff * 2);
  }
}

/**
 * Step 5 for the realtime driver thread: poll CMD_STATUS for a bounded time
 * (when `spin` says so), then Atomics.wait on it until the token completes.
 * Returns the status; throws DEV_ERR_CMD_TIMEOUT.
 */
export function waitCommand(bar: Bar, token: number, timeoutMs: number, spin?: CommandSpin): number {
  const want = token & 0xffff;
  if (spin?.shouldSpin()) {
    const t0 = performance.now();
    for (let i = 1; ; i++) {
      const v = Atomics.load(bar.i32, Reg.CMD_STATUS);
      if (v >>> 8 === want) {
        spin.found();
        return v & 0xff;
      }
      if ((i & 31) === 0 && (performance.now() - t0) * 1e6 > CommandSpin.MAX_NS) break;
    }
    spin.missed();
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = Atomics.load(bar.i32, Reg.CMD_STATUS);
    if (v >>> 8 === want) return v & 0xff;
    const left = deadline - Date.now();
    if (left <= 0) throw new DeviceError('DEV_ERR_CMD_TIMEOUT', `command token ${token} did not complete in ${timeoutMs} ms`);
    Atomics.wait(bar.i32, Reg.CMD_STATUS, v, left);
  }
}

/**
 * A driver-side command channel over one mailbox page: write, post, wait,
 * read. `serviceInline` is what the simulator passes (run the device's
 * serviceCommandDoorbell right after posting); the realtime driver leaves
 * it out and blocks in waitCommand.
 */
export class CommandChannel {
  private token = 0;
  private readonly spin = new CommandSpin();
  readonly mailboxAddr: number;
  readonly mailbox: Uint8Array;

  constructor(
    private readonly mem: HostMemory,
    private readonly bar: Bar,
    private readonly serviceInline?: () => void,
    private readonly timeoutMs = 5000,
  ) {
    const page = mem.alloc(MAILBOX_SIZE, MAILBOX_SIZE);
    this.mailboxAddr = page.addrNum;
    this.mailbox = page.view;
  }

  /** Execute one command; returns status, syndrome and the decoded output. */
  exec(opcode: number, values: Readonly<Record<string, unknown>> = {}): CommandResult & { out: Record<string, unknown> } {
    const def = commandByOpcode(opcode);
    if (!def) throw new DeviceError('DEV_ERR_LAYOUT', `unknown command opcode 0x${opcode.toString(16)}`);
    // The token after the last one the device served: never a repeat it would ignore,
    // even with several channels on one device (commands are serialized per device).
    this.token = ((Atomics.load(this.bar.i32, Reg.CMD_STATUS) >>> 8) % 0xffff) + 1;
    writeCommand(this.mailbox, opcode, this.token, def.input, values);
    postCommand(this.bar, this.mailboxAddr, this.token);
    this.serviceInline?.();
    const status = this.serviceInline ? pollCommand(this.bar, this.token) : waitCommand(this.bar, this.token, this.timeoutMs, this.spin);
    if (status < 0) throw new DeviceError('DEV_ERR_CMD_TIMEOUT', `command ${def.name} was not executed by the inline service`);
    return readCommandResult(this.mailbox, def.output);
  }

  /** Free the mailbox page. */
  close(): void {
    this.mem.free(this.mailboxAddr);
  }
}

/** "BAD_PARAM (syndrome 0x…)" for messages. */
export function describeResult(r: CommandResult): string {
  return r.syndrome ? `${cmdStatusName(r.status)} (syndrome ${r.syndrome})` : cmdStatusName(r.status);
}
