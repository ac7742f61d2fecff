/**
 * The libibverbs vocabulary shared by the driver and the device: constants,
 * structure types, zeroed structure constructors and the QP state machine.
 * Re-export this from the package root so `import { IBV_WR_RDMA_WRITE } from
 * 'rnic-model'` works.
 */
export * from '../../device/abi/constants.js';
export type * from './types.js';
export * from './structs.js';
export * from '../../device/abi/qp-state.js';
export * from './verbs.js';
export * from './cq-ex.js';
export * from './qp-ex.js';
export * from './query-ex.js';
export * from './memory.js';
export * from './mw.js';
export * from './xrcd.js';
export * from './unsupported.js';
export * from './eth-l2.js';
export * from './ah-from-wc.js';
export * from './srq-ex.js';
export * from './mcast.js';
export * from './errno-error.js';
export type * from './ops.js';
