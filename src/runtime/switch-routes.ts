/**
 * The forwarding tables of a configuration's switches, the same for both
 * runtimes: every device port is a host of the cabling graph, switches
 * forward, and each switch learns, for each host address, the ports that
 * start a shortest path to it (an ECMP set when there are several). Hosts
 * the configuration does not run (a peer process or a VM beyond a UDP
 * cable on a switch port) are named with the cable (`remoteHosts`).
 */
import type { Switch } from '../fabric/switch/switch.js';
import { shortestPathPorts, type TopoLink } from '../fabric/topology.js';
import { parseIpv4, parseIpv6, parseMac } from '../wire/index.js';

/** A host's addresses (a device port, or a remote host beyond a UDP cable). */
export interface HostAddresses {
  readonly mac: string;
  readonly ipv4: readonly string[];
  readonly ipv6: readonly string[];
}

/** One route of one switch: frames to `ip` leave by one of `ports` (0-based). */
export interface SwitchRoute {
  readonly ip: string;
  readonly mac: string;
  readonly ports: readonly number[];
}

export interface RoutedGraph {
  readonly devices: readonly { readonly name: string; readonly ports: readonly HostAddresses[] }[];
  /** In-process and ring wires, `DEVICE:PORT` or `SWITCH:PORT` at each end. */
  readonly wires: readonly { readonly a: string; readonly b: string }[];
  readonly switches: ReadonlySet<string>;
  /** Hosts beyond a switch port's UDP cable, by port (`sw0:3`). */
  readonly remoteHosts?: ReadonlyMap<string, readonly HostAddresses[]>;
}

/** Every switch's routes, by switch name. */
export function switchRoutes(g: RoutedGraph): Map<string, SwitchRoute[]> {
  const node = (ref: string): string => {
    const [n, p] = ref.split(':') as [string, string | undefined];
    return g.switches.has(n) ? `${n}:${p ?? '1'}` : `${n}/${p ?? '1'}:1`;
  };
  const links: TopoLink[] = g.wires.map((w) => ({ a: node(w.a), b: node(w.b) }));
  const remote = new Map<string, HostAddresses>();
  for (const [port, hosts] of g.remoteHosts ?? []) {
    hosts.forEach((h, k) => {
      const name = `udp/${port.replace(':', '/')}/${k}`;
      links.push({ a: node(port), b: `${name}:1` });
      remote.set(name, h);
    });
  }
  const table = shortestPathPorts(links, g.switches);
  const out = new Map<string, SwitchRoute[]>();
  for (const sw of g.switches) {
    const routes = table.get(sw)!;
    const list: SwitchRoute[] = [];
    const add = (host: string, a: HostAddresses): void => {
      const hops = routes.get(host);
      if (!hops) return;
      const ports = hops.map((h) => h - 1);
      for (const ip of [...a.ipv4, ...a.ipv6]) list.push({ ip, mac: a.mac, ports });
    };
    for (const d of g.devices) d.ports.forEach((p, j) => add(`${d.name}/${j + 1}`, p));
    for (const [name, a] of remote) add(name, a);
    out.set(sw, list);
  }
  return out;
}

/** Fills a switch's table: each route, and the host it answers ARP / ND for (ARP suppression). */
export function applyRoutes(sw: Switch, routes: readonly SwitchRoute[]): void {
  for (const r of routes) {
    const ip = r.ip.includes(':') ? parseIpv6(r.ip) : parseIpv4(r.ip);
    sw.addRoute(ip, r.ports);
    sw.addHost(ip, parseMac(r.mac));
  }
}

/** The MAC of port `port` (0-based) of the configuration's switch number `index`: 02:5e:ss:ss:pp:pp, locally administered. */
export function switchPortMac(index: number, port: number): string {
  const h = (n: number): string => (n & 0xff).toString(16).padStart(2, '0');
  return `02:5e:${h(index >> 8)}:${h(index)}:${h(port >> 8)}:${h(port)}`;
}
