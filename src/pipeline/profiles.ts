/**
 * Device profiles: the named sets of choices where real RNICs legitimately
 * differ (or differ from the IBTA text). The model follows the `ibta`
 * profile unless a device's configuration names another, so that one run
 * can mimic Linux Soft-RoCE and be compared with it (docs/compare.md).
 *
 * Each rxe choice names where in Linux it comes from
 * (drivers/infiniband/sw/rxe and drivers/infiniband/core, v6.1, the kernel
 * hw-tests boots) or the hw-tests case that found it.
 */

/** What the responder does with an RC SEND longer than its receive buffer. */
export type RecvOverflow =
  /** IBTA o9-? class C: NAK invalid request; the receive completes LOC_LEN_ERR. */
  | 'nak-invalid-request'
  /**
   * rxe 6.2 and later: NAK invalid request, and the receive completes
   * REM_INV_REQ_ERR (rxe_resp.c: copy_data's -ENOSPC → RESPST_ERR_LENGTH →
   * do_class_ac_error(AETH_NAK_INVALID_REQ, IB_WC_REM_INV_REQ_ERR)).
   */
  | 'nak-invalid-request-rem-inv'
  /**
   * rxe 6.1: copy_data fails with another errno, which rxe_resp.c treats as
   * RESPST_ERR_MALFORMED_WQE → do_class_ac_error(AETH_NAK_REM_OP_ERR,
   * IB_WC_LOC_QP_OP_ERR): NAK remote operational error, the requester
   * completes REM_OP_ERR and the receive LOC_QP_OP_ERR (hw-tests
   * `rc-recv-overflow`).
   */
  | 'nak-remote-op';

/** Source port of UD datagrams (RoCE v2). */
export type UdSourcePort =
  /** rdma_get_udp_sport(flow label, QPN, 0): 0xC000 unless the AV gives a flow label. */
  | 'flow-label'
  /** rxe_qp.c rxe_qp_init_req: 0xC000 + hash_32(qpn, 14) (wire/udp.ts rxeInitialUdpSport), per QP. */
  | 'rxe-qpn-hash';

export interface DeviceProfile {
  /** The profile's name, as a configuration names it. */
  readonly name: ProfileName;
  /** One line: whose behaviour this is. */
  readonly describes: string;
  /**
   * retry_cnt 7 means retry for ever (rxe_comp.c: `if (qp->comp.retry_cnt
   * != 7) qp->comp.retry_cnt--`); the IBTA's 3-bit count gives 7 retries.
   */
  readonly retryCnt7Infinite: boolean;
  readonly recvOverflow: RecvOverflow;
  /**
   * A receive posted to an RC QP already in ERR completes WR_FLUSH_ERR (IBTA
   * 10.7.3.1). rxe 6.1 leaves it in the queue until the responder task runs
   * again, which nothing triggers (hw-tests `rc-rem-access-error-flush`).
   */
  readonly flushRecvPostedInErr: boolean;
  /**
   * IPv4 TTL / IPv6 hop limit. null: the address vector's GRH hop_limit
   * (the IBTA's GRH field, carried into the IP header by RoCE v2). A number:
   * that value whatever the AV says — Linux ib_core resolves the route at
   * modify_qp / create_ah (core/verbs.c ib_resolve_unicast_gid_dmac) and
   * overwrites grh.hop_limit with the route's (64 by default), which
   * rxe_net.c prepare4/prepare6 then write.
   */
  readonly ipHopLimit: number | null;
  readonly udSourcePort: UdSourcePort;
  /**
   * RoCE v2 packets go out ECN-capable (ECT(0)) while the device's
   * congestion control has ECN on (`congestion.ecn`, as mlx5 with DCQCN).
   * false: the ECN bits are the traffic class's two low bits, whatever the
   * congestion settings — rxe_net.c prepare4/prepare6 write
   * av->grh.traffic_class as the TOS, and rxe has no congestion control
   * (seen on the cable: ECN 0 from rxe1, hw-tests compare cases).
   */
  readonly ectWithCongestionControl: boolean;
  /**
   * A READ response past the one expected (one of this READ's responses was
   * lost). 'reissue': the gap is an implied NAK, the READ is asked again at
   * once from the first byte not received (the IBTA's implied NAK; mlx5
   * counts it as implied_nak_seq_err). 'ignore': rxe_comp.c check_psn returns COMPST_DONE
   * for a READ or atomic response past comp.psn; the transport timer then
   * retries from there (seen on the cable: rxe re-reads one timeout later,
   * hw-tests compare-read_lat-loss).
   */
  readonly readResponseGap: 'reissue' | 'ignore';
  /**
   * AckReq on the last packet of every message (rxe_req.c init_req_packet:
   * `ack_req = (pkt->mask & RXE_END_MASK) || noack_pkts++ >
   * RXE_MAX_PKT_PER_ACK`). false: only on a message someone waits for
   * (signaled, or the last one queued) and every 64 packets — the IBTA
   * leaves it to the requester (9.7.4.1.1), and a stream of unsignaled
   * messages is then acknowledged cumulatively.
   */
  readonly ackReqEveryMessage: boolean;
}

export const PROFILE_NAMES = ['ibta', 'rxe'] as const;
/** mlx5 gets a name here once its choices are measured. */
export type ProfileName = (typeof PROFILE_NAMES)[number];

export const IBTA_PROFILE: DeviceProfile = Object.freeze({
  name: 'ibta',
  describes: 'the IBTA specification (Vol. 1 and the RoCE v2 annex A17)',
  retryCnt7Infinite: false,
  recvOverflow: 'nak-invalid-request',
  flushRecvPostedInErr: true,
  ipHopLimit: null,
  udSourcePort: 'flow-label',
  ectWithCongestionControl: true,
  readResponseGap: 'reissue',
  ackReqEveryMessage: false,
} satisfies DeviceProfile);

export const RXE_PROFILE: DeviceProfile = Object.freeze({
  name: 'rxe',
  describes: 'Linux 6.1 Soft-RoCE (rdma_rxe) with its ib_core',
  retryCnt7Infinite: true,
  recvOverflow: 'nak-remote-op',
  flushRecvPostedInErr: false,
  ipHopLimit: 64,
  udSourcePort: 'rxe-qpn-hash',
  ectWithCongestionControl: false,
  readResponseGap: 'ignore',
  ackReqEveryMessage: true,
} satisfies DeviceProfile);

export const PROFILES: Readonly<Record<ProfileName, DeviceProfile>> = Object.freeze({ ibta: IBTA_PROFILE, rxe: RXE_PROFILE });

/** The choices a configuration may set one by one on top of a named profile. */
export type ProfileChoices = Omit<DeviceProfile, 'name' | 'describes'>;

/** A profile by name, or a named base with some choices changed. */
export type ProfileSpec = ProfileName | ({ readonly base?: ProfileName } & Partial<ProfileChoices>);

/** The profile a spec stands for (undefined: the IBTA's). */
export function resolveProfile(spec: ProfileSpec | undefined): DeviceProfile {
  if (spec === undefined) return IBTA_PROFILE;
  if (typeof spec === 'string') return PROFILES[spec];
  const { base, ...choices } = spec;
  const b = PROFILES[base ?? 'ibta'];
  const set = Object.entries(choices).filter(([, v]) => v !== undefined);
  if (set.length === 0) return b;
  return Object.freeze({ ...b, ...Object.fromEntries(set), describes: `${b.describes}, with ${set.map(([k]) => k).join(', ')} changed` });
}

/** The choices where two profiles differ, by field name. */
export function profileDifferences(a: DeviceProfile, b: DeviceProfile): (keyof ProfileChoices)[] {
  const keys = Object.keys(IBTA_PROFILE).filter((k) => k !== 'name' && k !== 'describes') as (keyof ProfileChoices)[];
  return keys.filter((k) => a[k] !== b[k]);
}

/** Whether a QP with this retry_cnt retries for ever on this profile (rxe's 7): the one rule the completer and the judges share. */
export function retriesForever(profile: DeviceProfile, retryCnt: number): boolean {
  return retryCnt === 7 && profile.retryCnt7Infinite;
}
