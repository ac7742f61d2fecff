/**
 * src/device: the device interface — what a driver programs and what the
 * pipeline implements. See docs/device-interface.md.
 */
export * from './errors.js';
export * from './layout.js';
export { resolveParams, describeParams, parseBytes, type ParamSpec, type ParamSchema, type ParamValues } from '../params/params.js';
export * from './host-memory.js';
export * from './capabilities.js';
export * from './counters.js';
export * from './registers.js';
export * from './av.js';
export * from './wqe.js';
export * from './contexts.js';
export * from './cqe.js';
export * from './eqe.js';
export * from './firmware.js';
export * from './commands.js';
export * from './mailbox.js';
export * from './queues.js';
export * from './testbed.js';
