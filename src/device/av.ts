/**
 * The address vector: where a packet goes (ibv_ah_attr plus the resolved
 * destination MAC). The same 40-byte block is used in a UD send WQE (UD
 * address vectors are inline in the WQE: there are no device-side address
 * handles), in the QP context (primary and alternate path) and in the
 * MODIFY_QP / QUERY_QP commands.
 */
import { bytes, defineLayout, reserved, u } from './layout.js';

export const AV = defineLayout(
  'address-vector',
  40,
  'Address vector (ibv_ah_attr + destination MAC). On RoCE the GRH fields are required (isGlobal = 1); dmac is the next-hop MAC the driver resolved (the device does no ARP / neighbour lookup).',
  [
    bytes('dgid', 0x00, 16, 'destination GID, network byte order (as on the wire)'),
    bytes('dmac', 0x10, 6, 'destination MAC, wire order (RoCE only)'),
    u('dlid', 0x16, 0, 16, 'destination LID (InfiniBand only; 0 on RoCE)'),
    u('flowLabel', 0x18, 0, 20, 'GRH / IPv6 flow label'),
    u('sl', 0x1a, 4, 4, 'service level (RoCE: the 802.1p priority)'),
    u('trafficClass', 0x1b, 0, 8, 'GRH traffic class / IP DSCP+ECN byte'),
    u('hopLimit', 0x1c, 0, 8, 'GRH hop limit / IP TTL'),
    u('sgidIndex', 0x1d, 0, 8, 'source GID table index (selects RoCE v1 / v2 and the source IP)'),
    u('portNum', 0x1e, 0, 8, 'port number, 1-based'),
    u('staticRate', 0x1f, 0, 8, 'ibv_rate: maximum injection rate (0 = port rate)'),
    u('srcPathBits', 0x20, 0, 7, 'source path bits (InfiniBand only)'),
    u('isGlobal', 0x20, 7, 1, '1: a GRH is present (required on RoCE)'),
    reserved(0x21, 56),
  ],
);
