/**
 * Address handles. The device has no CREATE_AH: a UD address vector travels
 * inline in every UD send WQE (device manual, section 6.1), so an AH is a
 * driver object holding the encoded 40-byte AV, as mlx5 keeps its AVs in
 * userspace. The driver therefore checks what the device would: the port,
 * a populated source GID, a GRH on RoCE, a valid rate; fills the
 * destination MAC when it knows it; and enforces the device's maxAh.
 */
import { errno, IBV_LINK_LAYER_ETHERNET, IBV_RATE_1200_GBPS } from '../../device/abi/constants.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ibv_ah, ibv_ah_attr, ibv_pd } from '../verbs/types.js';
import { avValues, encodeAv } from './av.js';
import { model_live, model_port_gids } from './context.js';
import { ModelAh, ModelPd } from './objects.js';

export function model_create_ah(ibpd: ibv_pd, attr: ibv_ah_attr): ibv_ah {
  const pd = ibpd as ModelPd;
  if (!(pd instanceof ModelPd)) throw new VerbsError(errno.EINVAL, 'ibv_create_ah: not an ibv_pd of the model provider');
  const ctx = pd.context;
  model_live(ctx, 'ibv_create_ah');
  const fail = (n: number, why: string): never => {
    throw new VerbsError(n, `ibv_create_ah: ${why}`);
  };
  if (pd.destroyed) fail(errno.EINVAL, 'the PD was deallocated');
  if (!attr || typeof attr !== 'object') fail(errno.EINVAL, 'no attributes');
  const port = model_port_gids(ctx, attr.port_num);
  if (!port) return fail(errno.EINVAL, `no port ${String(attr.port_num)}`);
  if (port.linkLayer === IBV_LINK_LAYER_ETHERNET) {
    if (!attr.is_global) fail(errno.EINVAL, 'RoCE needs a GRH (is_global = 1)');
    if (typeof attr.grh !== 'object' || attr.grh === null || typeof attr.grh.sgid_index !== 'number' || !(attr.grh.sgid_index < port.gids.length))
      fail(errno.EINVAL, `GID index ${String(attr.grh?.sgid_index)} is empty on port ${port.portNum}`);
  } else {
    // InfiniBand: the LRH routes by DLID (the GRH is optional); LID 0 is reserved and 0xFFFF is the permissive LID of SMPs.
    if (!(typeof attr.dlid === 'number' && attr.dlid >= 1 && attr.dlid <= 0xfffe))
      fail(errno.EINVAL, `bad dlid ${String(attr.dlid)} (1..0xFFFE on InfiniBand)`);
    if (attr.is_global && !(typeof attr.grh?.sgid_index === 'number' && attr.grh.sgid_index < port.gids.length))
      fail(errno.EINVAL, `GID index ${String(attr.grh?.sgid_index)} is empty on port ${port.portNum}`);
  }
  if (!(typeof attr.static_rate === 'number' && attr.static_rate >= 0 && attr.static_rate <= IBV_RATE_1200_GBPS))
    fail(errno.EINVAL, `bad static_rate ${String(attr.static_rate)}`);
  if (ctx.device.ahCount >= ctx.limits.maxAh) fail(errno.ENOMEM, `${ctx.limits.maxAh} address handles exist`);
  const v = avValues(ctx, attr, port.portNum);
  if (typeof v === 'number') return fail(v, 'bad address vector');
  const av = encodeAv(v);
  if (typeof av === 'number') return fail(av, 'a field of the address vector is out of range');
  const ah = new ModelAh(ctx, pd, ctx.nextAhHandle++, av);
  ctx.device.ahCount++;
  ctx.ahs.add(ah);
  return ah;
}

export function model_destroy_ah(ibah: ibv_ah): number {
  const ah = ibah as ModelAh;
  if (!(ah instanceof ModelAh) || ah.destroyed) return errno.EINVAL;
  ah.destroyed = true;
  ah.context.device.ahCount--;
  ah.context.ahs.delete(ah);
  return 0;
}
