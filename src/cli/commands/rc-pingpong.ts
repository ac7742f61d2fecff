/** `rnic rc-pingpong`: rdma-core's rc_pingpong, ported (examples/rc_pingpong.ts). */
import { pingpongCommand } from './pingpong.js';

export const rcPingpongCommand = pingpongCommand('RC', 'rnic rc-pingpong');
