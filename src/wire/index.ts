/** src/wire: bytes on the wire. Pure functions, no clocks. */
export * from './errors.js';
export * from './opcodes.js';
export * from './ethernet.js';
export * from './ip.js';
export * from './udp.js';
export * from './ib-routing.js';
export * from './transport.js';
export * from './icrc.js';
export * from './lazy-icrc.js';
export * from './mac-control.js';
export * from './packet.js';
export * from './pcap.js';
export * from './pcap-writer.js';
export * from './build.js';
export * from './sample.js';
export * from './arp.js';
export * from './ndp.js';
