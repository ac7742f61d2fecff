/**
 * The extended queries: ibv_query_device_ex, ibv_query_gid_ex,
 * ibv_query_gid_table, ibv_get_pkey_index and ibv_query_rt_values_ex, with
 * libibverbs' return conventions (an errno; the table's entry count or a
 * negative errno; the P_Key index or -1 with errno, see rnic_errno).
 */
import { errno } from '../../device/abi/constants.js';
import { isObj, opsOrNull, setErrno } from './dispatch.js';
import { VerbsError } from './errno-error.js';
import { newDeviceAttr, newPortAttr } from './structs.js';
import type { ibv_context, ibv_device_attr_ex, ibv_gid_entry, ibv_query_device_ex_input, ibv_values_ex } from './types.js';

/** 0 or an errno. `input` may be null; its comp_mask must be 0 (libibverbs: EINVAL otherwise). */
export function ibv_query_device_ex(context: ibv_context, input: ibv_query_device_ex_input | null, attr: ibv_device_attr_ex): number {
  const o = opsOrNull(context);
  if (!o || !isObj(attr)) return errno.EINVAL;
  if (input !== null && input !== undefined && (!isObj(input) || input.comp_mask !== 0)) return errno.EINVAL;
  return o.query_device_ex(context, attr);
}

/** 0, EINVAL (no such port or index, flags ≠ 0) or ENODATA (the entry is empty). */
export function ibv_query_gid_ex(context: ibv_context, port_num: number, gid_index: number, entry: ibv_gid_entry, flags: number): number {
  const o = opsOrNull(context);
  if (!o || !isObj(entry) || typeof port_num !== 'number' || typeof gid_index !== 'number' || typeof flags !== 'number') return errno.EINVAL;
  return o.query_gid_ex(context, port_num, gid_index, entry, flags);
}

/**
 * Every populated GID of every port into entries[0..n), port by port in
 * index order; returns n, or a negative errno (-EINVAL when the table does
 * not fit max_entries or flags ≠ 0).
 */
export function ibv_query_gid_table(context: ibv_context, entries: ibv_gid_entry[], max_entries: number, flags: number): number {
  const o = opsOrNull(context);
  if (!o || !Array.isArray(entries) || !Number.isInteger(max_entries) || max_entries < 0 || max_entries > entries.length || flags !== 0) return -errno.EINVAL;
  const dev = newDeviceAttr();
  let rc = o.query_device(context, dev);
  if (rc) return -rc;
  const port = newPortAttr();
  let n = 0;
  for (let p = 1; p <= dev.phys_port_cnt; p++) {
    rc = o.query_port(context, p, port);
    if (rc) return -rc;
    for (let i = 0; i < port.gid_tbl_len; i++) {
      if (n === max_entries) {
        // One more populated entry than room: the table does not fit.
        const probe = { gid: { raw: new Uint8Array(16) }, gid_index: 0, port_num: 0, gid_type: 0, ndev_ifindex: 0 };
        rc = o.query_gid_ex(context, p, i, probe, 0);
        if (rc === 0) return -errno.EINVAL;
        if (rc !== errno.ENODATA) return -rc;
        continue;
      }
      const e = entries[n]!;
      if (!isObj(e)) return -errno.EINVAL;
      rc = o.query_gid_ex(context, p, i, e, 0);
      if (rc === errno.ENODATA) continue;
      if (rc) return -rc;
      n++;
    }
  }
  return n;
}

/** The index of `pkey` in the port's P_Key table, or -1 with rnic_errno() set. */
export function ibv_get_pkey_index(context: ibv_context, port_num: number, pkey: number): number {
  const o = opsOrNull(context);
  if (!o || typeof port_num !== 'number' || !Number.isInteger(pkey) || pkey < 0 || pkey > 0xffff) return setErrno(errno.EINVAL);
  for (let i = 0; ; i++) {
    let v: number;
    try {
      v = o.query_pkey(context, port_num, i);
    } catch (e) {
      return setErrno(e instanceof VerbsError ? e.errno : errno.EINVAL);
    }
    if (v === pkey) return i;
  }
}

/** 0 or an errno; with IBV_VALUES_MASK_RAW_CLOCK, raw_clock.tv_nsec is the device clock in ticks. */
export function ibv_query_rt_values_ex(context: ibv_context, values: ibv_values_ex): number {
  const o = opsOrNull(context);
  if (!o || !isObj(values)) return errno.EINVAL;
  return o.query_rt_values(context, values);
}
