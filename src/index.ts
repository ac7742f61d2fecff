/**
 * rnic-model's package entry: the verbs API and every libibverbs constant,
 * so `import { ibv_get_device_list, IBV_WR_RDMA_WRITE } from 'rnic-model'`
 * works; the model's devices appear on the first device listing.
 */
export * from './driver/verbs/index.js';
export { ensureModel, currentModel, stopModel, restartModel, startSimModel, disableAutoStart } from './boot.js';
export { parseConfig, loadConfig, DEFAULT_CONFIG, type ModelConfig } from './runtime/config.js';
