/**
 * `npm run bench`: every benchmark, each beside its in-run baseline.
 * `npm run bench -- NAME` runs one part (wire, sim, sim-stream, fabric,
 * verbs, objects, campaign, rdma-core); `--save-baseline` writes what the
 * run measured into bench/baseline.json.
 */
import { benchCampaign, printCampaign } from './campaign.bench.js';
import { benchFabric, printFabric } from './fabric.bench.js';
import { benchObjects, printObjects } from './objects.bench.js';
import { benchRdmaCore, benchRdmaCoreJs, printRdmaCore, printRdmaCoreJs } from './rdma-core.bench.js';
import { saveBaseline, vsBaseline } from './baseline.js';
import { benchRealtime, printRealtime } from './realtime.bench.js';
import { benchSimModel, printSimModel } from './sim-model.bench.js';
import { benchSimStream, printSimStream } from './sim-stream.bench.js';
import { benchLink, benchScheduler, printLink, printScheduler } from './sim.bench.js';
import { benchVerbs, printVerbs } from './verbs.bench.js';
import { benchWire, printWire } from './wire.bench.js';
import { DEFAULT_CONFIG } from '../src/index.js';

const args = process.argv.slice(2);
const save = args.includes('--save-baseline');
const only = args.find((a) => !a.startsWith('--'));
console.log(`rnic-model benchmarks — node ${process.version}, ${new Date().toISOString()}`);
if (!only || only === 'wire') printWire(benchWire());
if (!only || only === 'sim') {
  printScheduler([benchScheduler(10), benchScheduler(1000), benchScheduler(100_000)]);
  printLink(benchLink());
}
if (!only || only === 'verbs') printVerbs(benchVerbs());
if (!only || only === 'realtime') {
  // The default configuration (its `workers` follows the machine: 0 with at most 2 cores, else 1)
  // and the other of the two layouts (docs/pipeline.md, "Choosing the thread layout").
  const other = DEFAULT_CONFIG.workers === 0 ? 1 : 0;
  printRealtime([...(await benchRealtime()), ...(await benchRealtime({ workers: other }))], vsBaseline);
}
if (!only || only === 'sim' || only === 'sim-stream') {
  printSimStream([await benchSimStream({ messageBytes: 65536 }), await benchSimStream({ messageBytes: 4096 })], vsBaseline);
}
if (!only || only === 'sim') printSimModel([await benchSimModel()]);
if (!only || only === 'sim' || only === 'fabric') {
  printFabric([await benchFabric('scenarios/incast-8to1.json', 5), await benchFabric('scenarios/incast-64to1.json', 3)], vsBaseline);
}
if (!only || only === 'objects') printObjects(await benchObjects());
if (!only || only === 'campaign') printCampaign(await benchCampaign());
if (!only || only === 'rdma-core') {
  printRdmaCoreJs(benchRdmaCoreJs());
  printRdmaCore(await benchRdmaCore());
}
if (save) saveBaseline();
process.exit(0);
