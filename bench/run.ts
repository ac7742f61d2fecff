/** `npm run bench`: every benchmark, each beside its in-run baseline. */
import { benchWire, printWire } from './wire.bench.js';

const only = process.argv[2];
console.log(`rnic-model benchmarks — node ${process.version}, ${new Date().toISOString()}`);
if (!only || only === 'wire') printWire(benchWire());
