/**
 * The model provider: a verbs driver that programs the rnic-model device
 * only through its interface (host memory, BAR doorbells, the command
 * mailbox, CQEs / EQEs in host memory). See docs/verbs.md.
 */
export { addModelDevice, removeModelDevice, modelDeviceHandles, modelProvider } from './provider.js';
export type { ModelDeviceHandle } from './handle.js';
export { model_ctx_ops } from './ops.js';
export { MODEL_EQ_LOG_SIZE } from './context.js';
