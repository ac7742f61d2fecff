/**
 * rnic-model's package entry: the verbs API and every libibverbs constant,
 * so `import { ibv_get_device_list, IBV_WR_RDMA_WRITE } from 'rnic-model'`.
 */
export * from './driver/verbs/index.js';
