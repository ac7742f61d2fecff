/**
 * What src/wire may use of Node: zlib's CRC-32 (a pure function, the ICRC's
 * core) and V8's Error.stackTraceLimit (packet.ts lowers it while it builds
 * a decode error). The layer compiles without @types/node (types: []), so
 * any other `node:` import, or a timer, does not resolve.
 */
declare module 'node:zlib' {
  export function crc32(data: Uint8Array | string, value?: number): number;
}

interface ErrorConstructor {
  stackTraceLimit: number;
}
