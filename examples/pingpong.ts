/**
 * The helpers rdma-core's example programs share (libibverbs/examples/
 * pingpong.c), ported: MTU parsing, port query, and the "wire GID" text the
 * ping-pong programs put in their TCP address exchange.
 *
 * The wire GID is 32 hex digits, 8 per 4-byte group. The C code reads each
 * group as a host-order uint32 and prints htonl() of it, which on any host
 * comes out as the group's bytes in memory order: so the text is simply the
 * 16 GID bytes in order, in lower-case hex.
 */
import { IBV_MTU_1024, IBV_MTU_2048, IBV_MTU_256, IBV_MTU_4096, IBV_MTU_512, ibv_query_port } from '../src/driver/verbs/index.js';
import type { ibv_context, ibv_gid, ibv_mtu, ibv_port_attr } from '../src/driver/verbs/index.js';

/** MTU in bytes → enum ibv_mtu; -1 for anything but 256, 512, 1024, 2048, 4096 (as in C). */
export function pp_mtu_to_enum(mtu: number): ibv_mtu | -1 {
  switch (mtu) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 1024:
      return IBV_MTU_1024;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
    default:
      return -1;
  }
}

export function pp_get_port_info(context: ibv_context, port: number, attr: ibv_port_attr): number {
  return ibv_query_port(context, port, attr);
}

/**
 * 32 hex digits → gid.raw. Returns false (and leaves gid unchanged) when
 * `wgid` is not 32 hex digits; C's sscanf would read garbage instead.
 */
export function wire_gid_to_gid(wgid: string, gid: ibv_gid): boolean {
  if (!/^[0-9a-fA-F]{32}$/.test(wgid)) return false;
  for (let i = 0; i < 16; i++) gid.raw[i] = parseInt(wgid.slice(2 * i, 2 * i + 2), 16);
  return true;
}

/** gid.raw → 32 lower-case hex digits (C: four "%08x" of htonl(group)). */
export function gid_to_wire_gid(gid: ibv_gid): string {
  let s = '';
  for (let i = 0; i < 16; i++) s += (gid.raw[i] as number).toString(16).padStart(2, '0');
  return s;
}
