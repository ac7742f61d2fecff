/** src/compare: what `rnic compare` does, without I/O (docs/compare.md). */
export * from './types.js';
export { compareRuns, IGNORED } from './compare.js';
export { renderReport } from './render.js';
export { flowsOf, type Flow, type FlowPacket } from './flows.js';
export { CompareInputError, decodeCapture } from './capture.js';
