/**
 * A second model process at the far end of a UDP cable: opens a UdpCable
 * (argv: local, remote), tells its parent it is ready (over the fork IPC
 * channel), and reflects every frame back with source and destination MAC
 * swapped. On 'close' from the parent it sends its counters and exits.
 */
import { UdpCable } from '../../src/runtime/udp-cable.js';

const [local, remote] = process.argv.slice(2);
const cable = await UdpCable.open({ local: local!, remote: remote! });
cable.onReceive((f) => {
  const out = f.slice();
  out.set(f.subarray(6, 12), 0);
  out.set(f.subarray(0, 6), 6);
  cable.send(out);
});
process.on('message', (m) => {
  if (m === 'close') {
    process.send!({ stats: cable.stats }, () => {
      cable.close();
      process.disconnect();
    });
  }
});
process.send!({ ready: true, pid: process.pid, port: cable.localEndpoint.port });
