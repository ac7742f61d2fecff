/**
 * Renders the run's plots to SVG with vega's headless View (renderer
 * 'none': no canvas or DOM) and assembles the self-contained HTML report.
 */
import * as vega from 'vega';
import type { ScenarioResult } from '../../scenario/scenario-runner.js';
import { ccRateSpec, fctSpec, flowRateSpec, pauseSpec, queueDepthSpec } from './plots.js';

export async function toSvg(spec: Record<string, unknown>): Promise<string> {
  const view = new vega.View(vega.parse(spec as vega.Spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** The plots of a fabric run, by file name (the congestion-control rate when a NIC had a flow). */
export async function renderPlots(r: ScenarioResult): Promise<Record<string, string>> {
  if (r.fabric === null) return {};
  return {
    'queue-depth.svg': await toSvg(queueDepthSpec(r.fabric)),
    'flow-rate.svg': await toSvg(flowRateSpec(r.fabric)),
    'pauses.svg': await toSvg(pauseSpec(r.fabric, r.endNs)),
    'fct.svg': await toSvg(fctSpec(r.flows)),
    ...(Object.keys(r.fabric.series.ccRateGbps).length > 0 ? { 'cc-rate.svg': await toSvg(ccRateSpec(r.fabric)) } : {}),
  };
}

const esc = (s: string): string => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** One HTML file: the summary, the plots inline, the per-port switch counters and the flows. */
export function reportHtml(r: ScenarioResult, summaryText: string, plots: Record<string, string>): string {
  const rows: string[] = [];
  for (const [sw, ports] of Object.entries(r.fabric?.switches ?? {})) {
    for (const [p, c] of Object.entries(ports)) {
      rows.push(
        `<tr><td>${esc(sw)}:${p}</td><td>${esc(c.peer ?? '-')}</td><td>${c.txFrames}</td><td>${c.queueBytesHighWater}</td><td>${c.droppedFrames}</td><td>${c.ecnMarked}</td><td>${c.pauseSent}</td><td>${c.resumeSent}</td><td>${c.pauseReceived}</td></tr>`,
      );
    }
  }
  const flows = r.flows.map(
    (f) =>
      `<tr><td>${esc(f.name)}</td><td>${esc(f.src)}</td><td>${esc(f.dst)}</td><td>${f.qp}</td><td>${f.bytes}</td><td>${f.startNs ?? '-'}</td><td>${f.finishNs ?? '-'}</td><td>${f.fctNs ?? '-'}</td></tr>`,
  );
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(r.scenario)}: rnic sim report</title>
<style>body{font-family:sans-serif;margin:1.5em;max-width:80em}pre{background:#f4f4f4;padding:.8em;overflow:auto}table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}figure{margin:1em 0}</style>
</head><body>
<h1>${esc(r.scenario)} (seed ${esc(String(r.seed))})</h1>
<p>${r.endNs} ns simulated in ${(r.wallNs / 1e6).toFixed(0)} ms wall; ${r.eventsRun} events; ${r.packetHops} packet-hops; ${r.verify.length === 0 ? 'all checks passed' : `${r.verify.length} checks failed`}.</p>
<pre>${esc(summaryText)}</pre>
${Object.entries(plots)
  .map(([name, svg]) => `<figure><figcaption>${esc(name)}</figcaption>${svg}</figure>`)
  .join('\n')}
<h2>Switch ports</h2>
<table><tr><th>port</th><th>faces</th><th>tx frames</th><th>queue high water (B)</th><th>drops</th><th>ECN marked</th><th>XOFF sent</th><th>XON sent</th><th>pauses received</th></tr>
${rows.join('\n')}</table>
<h2>Flows</h2>
<table><tr><th>flow</th><th>src</th><th>dst</th><th>QP</th><th>bytes</th><th>start ns</th><th>finish ns</th><th>FCT ns</th></tr>
${flows.join('\n')}</table>
</body></html>
`;
}
