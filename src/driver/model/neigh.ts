/**
 * Destination MAC resolution for RoCE address vectors: what the Linux RoCE
 * core does in ib_resolve_eth_dmac before it hands an AV to a driver. Every
 * UD WQE and every QP path carries the next-hop MAC; the driver fills it
 * when it knows it, and leaves it zero otherwise, for the device's port to
 * resolve (ARP / neighbour discovery) before it sends.
 *
 * Order of lookups (first hit wins):
 *  1. one of the port's own GIDs: loopback to the port's own MAC;
 *  2. the runtime's neighbour table (ModelDeviceHandle.resolveMac), the
 *     host's ARP / ND cache;
 *  3. the GIDs of every model device opened in this process (a host with
 *     several model NICs knows its own addresses);
 *  4. a link-local GID with a modified EUI-64 interface id (fe80::/64 with
 *     ff:fe in the middle): the MAC is in the GID, as rdma_get_ll_mac;
 *  5. multicast GIDs: IPv6 33:33:xx:xx:xx:xx, IPv4-mapped 01:00:5e:xx:xx:xx.
 */

/** GID (hex) → { device name, MAC } of model devices in this process. */
const localGids = new Map<string, { device: string; mac: Uint8Array }>();

function gidKey(gid: Uint8Array): string {
  let s = '';
  for (let i = 0; i < 16; i++) s += (gid[i]! < 16 ? '0' : '') + gid[i]!.toString(16);
  return s;
}

/** Record the populated GIDs of a model device port (at context open). */
export function neighLearn(device: string, gids: readonly Uint8Array[], mac: Uint8Array | null): void {
  if (!mac) return;
  for (const g of gids) localGids.set(gidKey(g), { device, mac });
}

/** Forget a removed device's GIDs. */
export function neighForget(device: string): void {
  for (const [k, v] of localGids) if (v.device === device) localGids.delete(k);
}

/** The MAC of a link-local GID fe80::/64 with a modified EUI-64 interface id, or null. */
export function macFromLinkLocalGid(gid: Uint8Array): Uint8Array | null {
  if (gid[0] !== 0xfe || (gid[1]! & 0xc0) !== 0x80) return null;
  for (let i = 2; i < 8; i++) if (gid[i] !== 0) return null;
  if (gid[11] !== 0xff || gid[12] !== 0xfe) return null;
  return Uint8Array.of(gid[8]! ^ 0x02, gid[9]!, gid[10]!, gid[13]!, gid[14]!, gid[15]!);
}

function isIpv4Mapped(gid: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (gid[i] !== 0) return false;
  return gid[10] === 0xff && gid[11] === 0xff;
}

/** The Ethernet multicast MAC of a multicast GID, or null. */
export function macFromMulticastGid(gid: Uint8Array): Uint8Array | null {
  if (gid[0] === 0xff) return Uint8Array.of(0x33, 0x33, gid[12]!, gid[13]!, gid[14]!, gid[15]!);
  if (isIpv4Mapped(gid) && (gid[12]! & 0xf0) === 0xe0) return Uint8Array.of(0x01, 0x00, 0x5e, gid[13]! & 0x7f, gid[14]!, gid[15]!);
  return null;
}

export interface NeighSource {
  /** The port's own populated GIDs and MAC. */
  readonly ownGids: readonly Uint8Array[];
  readonly ownMac: Uint8Array | null;
  readonly resolveMac?: ((portNum: number, dgid: Uint8Array) => Uint8Array | null) | undefined;
}

function sameGid(a: Uint8Array, b: Uint8Array): boolean {
  for (let i = 0; i < 16; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Next-hop MAC for `dgid` out of port `portNum`, or null if unresolvable. */
export function neighResolve(src: NeighSource, portNum: number, dgid: Uint8Array): Uint8Array | null {
  if (src.ownMac && src.ownGids.some((g) => sameGid(g, dgid))) return src.ownMac;
  const fromRuntime = src.resolveMac?.(portNum, dgid);
  if (fromRuntime && fromRuntime.length === 6) return fromRuntime;
  const local = localGids.get(gidKey(dgid));
  if (local) return local.mac;
  return macFromLinkLocalGid(dgid) ?? macFromMulticastGid(dgid);
}
