// The extended verbs of libibverbs, bound as the classic ones are
// (rdma_core.cc): extended queries, the extended CQ and its poll API,
// CQ resize and moderation, the extended QP and the new post API
// (ibv_wr_*), memory beyond ibv_reg_mr, multicast, the QP rate limit, XRC
// domains and SRQs.
//
// What a provider does not implement, libibverbs answers (EOPNOTSUPP from
// its dummy ops or its inline wrappers): that answer is passed through as
// the device's. What would reach a NULL function pointer in C (a poll
// reader for a field not in wc_flags, a builder not in send_ops_flags, the
// poll API on a classic CQ) is refused here first.
#include "common.h"

namespace {
using namespace rnic;

// ---------------------------------------------------------------- queries
Napi::Value QueryDeviceEx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(env, EINVAL);
  ibv_device_attr_ex a;
  memset(&a, 0, sizeof a);
  int r = ibv_query_device_ex(ctx, nullptr, &a);
  if (r) return N(env, r);
  auto o = Napi::Object::New(env);
  o.Set("orig_attr", DeviceAttrToJs(env, a.orig_attr));
  o.Set("comp_mask", N(env, a.comp_mask));
  auto odp = Napi::Object::New(env);
  odp.Set("general_caps", Big(env, a.odp_caps.general_caps));
  auto per = Napi::Object::New(env);
  per.Set("rc_odp_caps", N(env, a.odp_caps.per_transport_caps.rc_odp_caps));
  per.Set("uc_odp_caps", N(env, a.odp_caps.per_transport_caps.uc_odp_caps));
  per.Set("ud_odp_caps", N(env, a.odp_caps.per_transport_caps.ud_odp_caps));
  odp.Set("per_transport_caps", per);
  o.Set("odp_caps", odp);
  o.Set("completion_timestamp_mask", Big(env, a.completion_timestamp_mask));
  o.Set("hca_core_clock", Big(env, a.hca_core_clock));
  o.Set("device_cap_flags_ex", Big(env, a.device_cap_flags_ex));
  auto tso = Napi::Object::New(env);
  tso.Set("max_tso", N(env, a.tso_caps.max_tso));
  tso.Set("supported_qpts", N(env, a.tso_caps.supported_qpts));
  o.Set("tso_caps", tso);
  auto rss = Napi::Object::New(env);
  rss.Set("supported_qpts", N(env, a.rss_caps.supported_qpts));
  rss.Set("max_rwq_indirection_tables", N(env, a.rss_caps.max_rwq_indirection_tables));
  rss.Set("max_rwq_indirection_table_size", N(env, a.rss_caps.max_rwq_indirection_table_size));
  rss.Set("rx_hash_fields_mask", Big(env, a.rss_caps.rx_hash_fields_mask));
  rss.Set("rx_hash_function", N(env, a.rss_caps.rx_hash_function));
  o.Set("rss_caps", rss);
  o.Set("max_wq_type_rq", N(env, a.max_wq_type_rq));
  auto pp = Napi::Object::New(env);
  pp.Set("qp_rate_limit_min", N(env, a.packet_pacing_caps.qp_rate_limit_min));
  pp.Set("qp_rate_limit_max", N(env, a.packet_pacing_caps.qp_rate_limit_max));
  pp.Set("supported_qpts", N(env, a.packet_pacing_caps.supported_qpts));
  o.Set("packet_pacing_caps", pp);
  o.Set("raw_packet_caps", N(env, a.raw_packet_caps));
  auto tm = Napi::Object::New(env);
  tm.Set("max_rndv_hdr_size", N(env, a.tm_caps.max_rndv_hdr_size));
  tm.Set("max_num_tags", N(env, a.tm_caps.max_num_tags));
  tm.Set("flags", N(env, a.tm_caps.flags));
  tm.Set("max_ops", N(env, a.tm_caps.max_ops));
  tm.Set("max_sge", N(env, a.tm_caps.max_sge));
  o.Set("tm_caps", tm);
  auto cqm = Napi::Object::New(env);
  cqm.Set("max_cq_count", N(env, a.cq_mod_caps.max_cq_count));
  cqm.Set("max_cq_period", N(env, a.cq_mod_caps.max_cq_period));
  o.Set("cq_mod_caps", cqm);
  o.Set("max_dm_size", Big(env, a.max_dm_size));
  auto pci = Napi::Object::New(env);
  pci.Set("fetch_add", N(env, a.pci_atomic_caps.fetch_add));
  pci.Set("swap", N(env, a.pci_atomic_caps.swap));
  pci.Set("compare_swap", N(env, a.pci_atomic_caps.compare_swap));
  o.Set("pci_atomic_caps", pci);
  o.Set("xrc_odp_caps", N(env, a.xrc_odp_caps));
  o.Set("phys_port_cnt_ex", N(env, a.phys_port_cnt_ex));
  return o;
}

// (ctx, port, index, flags) -> { gid, gid_index, port_num, gid_type, ndev_ifindex } or the errno.
Napi::Value QueryGidEx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(env, EINVAL);
  ibv_gid_entry e;
  memset(&e, 0, sizeof e);
  int r = ibv_query_gid_ex(ctx, U32(info[1]), U32(info[2]), &e, U32(info[3]));
  if (r) return N(env, r < 0 ? -r : r);
  auto o = Napi::Object::New(env);
  auto g = Napi::Uint8Array::New(env, 16);
  memcpy(g.Data(), e.gid.raw, 16);
  o.Set("gid", g);
  o.Set("gid_index", N(env, e.gid_index));
  o.Set("port_num", N(env, e.port_num));
  o.Set("gid_type", N(env, e.gid_type));
  o.Set("ndev_ifindex", N(env, e.ndev_ifindex));
  return o;
}

// (ctx, comp_mask) -> { comp_mask, tv_sec, tv_nsec } or the errno.
Napi::Value QueryRtValuesEx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(env, EINVAL);
  ibv_values_ex v;
  memset(&v, 0, sizeof v);
  v.comp_mask = U32(info[1]);
  int r = ibv_query_rt_values_ex(ctx, &v);
  if (r) return N(env, r);
  auto o = Napi::Object::New(env);
  o.Set("comp_mask", N(env, v.comp_mask));
  o.Set("tv_sec", Big(env, static_cast<uint64_t>(v.raw_clock.tv_sec)));
  o.Set("tv_nsec", Big(env, static_cast<uint64_t>(v.raw_clock.tv_nsec)));
  return o;
}

// ---------------------------------------------------------------- extended CQ
// (ctx, cqe, channel|0, comp_vector, wc_flags, comp_mask, flags) -> { ptr, cqe, handle } or the errno.
Napi::Value CreateCqEx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  ibv_comp_channel* ch = nullptr;
  if (!ctx || !Opt(info[2], K_CH, &ch)) return N(env, EINVAL);
  ibv_cq_init_attr_ex a;
  memset(&a, 0, sizeof a);
  a.cqe = U32(info[1]);
  a.channel = ch;
  a.comp_vector = U32(info[3]);
  a.wc_flags = U64(info[4]);
  a.comp_mask = U32(info[5]);
  a.flags = U32(info[6]);
  // A parent domain is not bound: the TS side refuses IBV_CQ_INIT_ATTR_MASK_PD.
  if (a.comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) return N(env, EOPNOTSUPP);
  ibv_cq_ex* cq = ibv_create_cq_ex(ctx, &a);
  if (!cq) return N(env, errno ? errno : ENOMEM);
  ibv_cq* base = ibv_cq_ex_to_cq(cq);
  Track(base, K_CQ, ctx, true, a.wc_flags);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, base));
  o.Set("cqe", N(env, base->cqe));
  o.Set("handle", N(env, base->handle));
  return o;
}

// Extended wc record, 56 bytes: the 48 of PollCq (rdma_core.cc), then u64 completion_ts.
constexpr size_t WCX_REC = 56;

// (cq, n) -> how many records were written, or -errno. Reads only the
// fields the CQ was created with (a reader outside wc_flags may be NULL).
Napi::Value PollCqEx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  void* p = P(info[0]);
  const Live* l = p ? Find(p, K_CQ) : nullptr;
  if (!l || !l->ex || !wcBuf) return N(env, -EINVAL);
  auto* cq = reinterpret_cast<ibv_cq_ex*>(p);
  uint64_t f = l->flags;
  int n = I32(info[1]);
  int max = static_cast<int>(wcLen / WCX_REC);
  if (n < 0) return N(env, -EINVAL);
  if (n > max) n = max;
  if (n == 0) return N(env, 0.0);
  ibv_poll_cq_attr attr = {};
  int r = ibv_start_poll(cq, &attr);
  if (r == ENOENT) return N(env, 0.0);
  if (r) return N(env, -r);
  int got = 0;
  for (;;) {
    uint8_t* rec = wcBuf + got * WCX_REC;
    memset(rec, 0, WCX_REC);
    memcpy(rec, &cq->wr_id, 8);
    uint32_t u[8] = {static_cast<uint32_t>(cq->status),
                     static_cast<uint32_t>(ibv_wc_read_opcode(cq)),
                     ibv_wc_read_vendor_err(cq),
                     f & IBV_WC_EX_WITH_BYTE_LEN ? ibv_wc_read_byte_len(cq) : 0,
                     f & IBV_WC_EX_WITH_IMM ? static_cast<uint32_t>(ibv_wc_read_imm_data(cq)) : 0,
                     f & IBV_WC_EX_WITH_QP_NUM ? ibv_wc_read_qp_num(cq) : 0,
                     f & IBV_WC_EX_WITH_SRC_QP ? ibv_wc_read_src_qp(cq) : 0,
                     ibv_wc_read_wc_flags(cq)};
    memcpy(rec + 8, u, 32);
    uint16_t s[2] = {0, static_cast<uint16_t>(f & IBV_WC_EX_WITH_SLID ? ibv_wc_read_slid(cq) : 0)};
    memcpy(rec + 40, s, 4);
    rec[44] = f & IBV_WC_EX_WITH_SL ? ibv_wc_read_sl(cq) : 0;
    rec[45] = f & IBV_WC_EX_WITH_DLID_PATH_BITS ? ibv_wc_read_dlid_path_bits(cq) : 0;
    uint64_t ts = f & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP ? ibv_wc_read_completion_ts(cq) : 0;
    memcpy(rec + 48, &ts, 8);
    got++;
    if (got == n) break;
    r = ibv_next_poll(cq);
    if (r) break;  // ENOENT: no more ready (another errno: reported with the next start)
  }
  ibv_end_poll(cq);
  return N(env, got);
}

// (cq, cqe) -> [rc, cq->cqe after]
Napi::Value ResizeCq(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* cq = Obj<ibv_cq>(info[0], K_CQ);
  auto out = Napi::Array::New(env, 2);
  int r = cq ? ibv_resize_cq(cq, I32(info[1])) : EINVAL;
  out.Set(0u, N(env, r));
  out.Set(1u, N(env, cq ? cq->cqe : 0));
  return out;
}

// (cq, attr_mask, cq_count, cq_period) -> rc
Napi::Value ModifyCq(const Napi::CallbackInfo& info) {
  auto* cq = Obj<ibv_cq>(info[0], K_CQ);
  if (!cq) return N(info.Env(), EINVAL);
  ibv_modify_cq_attr a;
  memset(&a, 0, sizeof a);
  a.attr_mask = U32(info[1]);
  a.moderate.cq_count = static_cast<uint16_t>(U32(info[2]));
  a.moderate.cq_period = static_cast<uint16_t>(U32(info[3]));
  return N(info.Env(), ibv_modify_cq(cq, &a));
}

// ---------------------------------------------------------------- extended QP
// (ctx, pd, send_cq, recv_cq, srq|0, qp_type, sq_sig_all, max_send_wr,
//  max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, comp_mask,
//  create_flags, send_ops_flags) -> { ptr, qp_num, handle, cap, ex } or the errno.
Napi::Value CreateQpEx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  ibv_qp_init_attr_ex a;
  memset(&a, 0, sizeof a);
  a.pd = Obj<ibv_pd>(info[1], K_PD);
  a.send_cq = Obj<ibv_cq>(info[2], K_CQ);
  a.recv_cq = Obj<ibv_cq>(info[3], K_CQ);
  if (!ctx || !a.pd || !a.send_cq || !a.recv_cq || !Opt(info[4], K_SRQ, &a.srq)) return N(env, EINVAL);
  a.qp_type = static_cast<ibv_qp_type>(U32(info[5]));
  a.sq_sig_all = I32(info[6]);
  a.cap.max_send_wr = U32(info[7]);
  a.cap.max_recv_wr = U32(info[8]);
  a.cap.max_send_sge = U32(info[9]);
  a.cap.max_recv_sge = U32(info[10]);
  a.cap.max_inline_data = U32(info[11]);
  a.comp_mask = U32(info[12]);
  a.create_flags = U32(info[13]);
  a.send_ops_flags = U64(info[14]);
  // Only these are bound (XRC, TSO and RSS need objects this addon does not make).
  if (a.comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) return N(env, EOPNOTSUPP);
  ibv_qp* qp = ibv_create_qp_ex(ctx, &a);
  if (!qp) return N(env, errno ? errno : ENOMEM);
  bool ex = (a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && ibv_qp_to_qp_ex(qp) != nullptr;
  Track(qp, K_QP, ctx, ex, ex ? a.send_ops_flags : 0);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, qp));
  o.Set("qp_num", N(env, qp->qp_num));
  o.Set("handle", N(env, qp->handle));
  o.Set("cap", CapToJs(env, a.cap));
  o.Set("ex", Napi::Boolean::New(env, ex));
  return o;
}

constexpr uint32_t WR_FLUSH = 14;  // IBV_WR_FLUSH: newer than this libibverbs (no ibv_wr_flush)

/** The IBV_QP_EX_WITH_* bit of an opcode, or 0 for one the new post API has no builder for here. */
uint64_t OpFlag(uint32_t op) {
  if (op <= IBV_WR_SEND_WITH_INV) return 1ull << op;
  if (op == IBV_WR_ATOMIC_WRITE) return IBV_QP_EX_WITH_ATOMIC_WRITE;
  return 0;
}

// postSendEx(qp, n): the n records of the wr scratch (PostSend's layout)
// through ibv_wr_start / ibv_wr_<op> / ibv_wr_set_* / ibv_wr_complete:
// all posted, or none. Every record is checked before the batch opens.
Napi::Value PostSendEx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  void* p = P(info[0]);
  const Live* l = p ? Find(p, K_QP) : nullptr;
  int n = I32(info[1]);
  if (!l || !l->ex || n < 1 || n > MAX_WR || !wrBuf) return N(env, EINVAL);
  auto* qp = static_cast<ibv_qp*>(p);
  ibv_qp_ex* qpx = ibv_qp_to_qp_ex(qp);
  if (!qpx) return N(env, EINVAL);
  ibv_send_wr wr[MAX_WR];
  ibv_sge sge[MAX_SGE_TOTAL];
  SendExtra extra[MAX_WR];
  int badIdx = 0;
  int e = DecodeSend(qp, n, wr, sge, extra, &badIdx);
  if (e) return N(env, e);
  for (int i = 0; i < n; i++) {
    if (wr[i].opcode == WR_FLUSH) return N(env, EOPNOTSUPP);
    uint64_t bit = OpFlag(wr[i].opcode);
    if (!bit || !(l->flags & bit)) return N(env, EINVAL);
    if (wr[i].opcode == IBV_WR_BIND_MW && !wr[i].bind_mw.bind_info.mr && wr[i].bind_mw.bind_info.length) return N(env, EINVAL);
  }
  ibv_wr_start(qpx);
  for (int i = 0; i < n; i++) {
    ibv_send_wr& w = wr[i];
    qpx->wr_id = w.wr_id;
    qpx->wr_flags = w.send_flags & ~IBV_SEND_INLINE;
    bool data = true;
    switch (w.opcode) {
      case IBV_WR_RDMA_WRITE: ibv_wr_rdma_write(qpx, w.wr.rdma.rkey, w.wr.rdma.remote_addr); break;
      case IBV_WR_RDMA_WRITE_WITH_IMM: ibv_wr_rdma_write_imm(qpx, w.wr.rdma.rkey, w.wr.rdma.remote_addr, w.imm_data); break;
      case IBV_WR_SEND: ibv_wr_send(qpx); break;
      case IBV_WR_SEND_WITH_IMM: ibv_wr_send_imm(qpx, w.imm_data); break;
      case IBV_WR_SEND_WITH_INV: ibv_wr_send_inv(qpx, w.invalidate_rkey); break;
      case IBV_WR_RDMA_READ: ibv_wr_rdma_read(qpx, w.wr.rdma.rkey, w.wr.rdma.remote_addr); break;
      case IBV_WR_ATOMIC_CMP_AND_SWP:
        ibv_wr_atomic_cmp_swp(qpx, w.wr.atomic.rkey, w.wr.atomic.remote_addr, w.wr.atomic.compare_add, w.wr.atomic.swap);
        break;
      case IBV_WR_ATOMIC_FETCH_AND_ADD: ibv_wr_atomic_fetch_add(qpx, w.wr.atomic.rkey, w.wr.atomic.remote_addr, w.wr.atomic.compare_add); break;
      case IBV_WR_ATOMIC_WRITE: ibv_wr_atomic_write(qpx, w.wr.rdma.rkey, w.wr.rdma.remote_addr, &extra[i].compare); break;
      case IBV_WR_LOCAL_INV:
        ibv_wr_local_inv(qpx, w.invalidate_rkey);
        data = false;
        break;
      case IBV_WR_BIND_MW:
        ibv_wr_bind_mw(qpx, w.bind_mw.mw, w.bind_mw.rkey, &w.bind_mw.bind_info);
        data = false;
        break;
      default: ibv_wr_abort(qpx); return N(env, EINVAL);
    }
    if (qp->qp_type == IBV_QPT_UD) ibv_wr_set_ud_addr(qpx, w.wr.ud.ah, w.wr.ud.remote_qpn, w.wr.ud.remote_qkey);
    if (!data) continue;
    if (w.send_flags & IBV_SEND_INLINE) {
      // The bytes are copied from these addresses: the TS side checked they are memory it holds.
      ibv_data_buf bufs[MAX_SGE_TOTAL];
      for (int j = 0; j < w.num_sge; j++) bufs[j] = {reinterpret_cast<void*>(static_cast<uintptr_t>(w.sg_list[j].addr)), w.sg_list[j].length};
      ibv_wr_set_inline_data_list(qpx, w.num_sge, bufs);
    } else {
      ibv_wr_set_sge_list(qpx, w.num_sge, w.sg_list);
    }
  }
  return N(env, ibv_wr_complete(qpx));
}

// ---------------------------------------------------------------- memory
// (pd, buf, iova, access) -> the MR or the errno.
Napi::Value RegMrIova(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* pd = Obj<ibv_pd>(info[0], K_PD);
  if (!pd || !IsBytes(info[1]) || !info[2].IsBigInt()) return N(env, EINVAL);
  auto ta = info[1].As<Napi::Uint8Array>();
  ibv_mr* mr = ibv_reg_mr_iova2(pd, ta.Data(), ta.ByteLength(), U64(info[2]), U32(info[3]));
  if (!mr) return N(env, errno ? errno : EINVAL);
  Track(mr, K_MR, pd->context);
  return MrToJs(env, mr);
}

Napi::Value AllocNullMr(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* pd = Obj<ibv_pd>(info[0], K_PD);
  if (!pd) return N(env, EINVAL);
  errno = 0;
  ibv_mr* mr = ibv_alloc_null_mr(pd);
  if (!mr) return N(env, errno ? errno : EOPNOTSUPP);
  Track(mr, K_MR, pd->context);
  return MrToJs(env, mr);
}

// (mr, flags, pd|0, buf|null, access) -> { rc, errno, mr } (mr: its fields after, as libibverbs updates them)
Napi::Value ReregMr(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto o = Napi::Object::New(env);
  auto* mr = Obj<ibv_mr>(info[0], K_MR);
  ibv_pd* pd = nullptr;
  int flags = I32(info[1]);
  bool bufOk = !(flags & IBV_REREG_MR_CHANGE_TRANSLATION) || IsBytes(info[3]);
  if (!mr || !Opt(info[2], K_PD, &pd) || ((flags & IBV_REREG_MR_CHANGE_PD) && !pd) || !bufOk) {
    o.Set("rc", N(env, IBV_REREG_MR_ERR_INPUT));
    o.Set("errno", N(env, EINVAL));
    return o;
  }
  void* addr = nullptr;
  size_t len = 0;
  if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
    auto ta = info[3].As<Napi::Uint8Array>();
    addr = ta.Data();
    len = ta.ByteLength();
  }
  errno = 0;
  int r = ibv_rereg_mr(mr, flags, pd, addr, len, I32(info[4]));
  o.Set("rc", N(env, r));
  o.Set("errno", N(env, r ? (errno ? errno : EINVAL) : 0));
  o.Set("mr", MrToJs(env, mr));
  return o;
}

// ---------------------------------------------------------------- multicast, rate limit
Napi::Value Mcast(const Napi::CallbackInfo& info, bool attach) {
  auto* qp = Obj<ibv_qp>(info[0], K_QP);
  if (!qp || !IsBytes(info[1]) || info[1].As<Napi::Uint8Array>().ByteLength() != 16) return N(info.Env(), EINVAL);
  ibv_gid g;
  memcpy(g.raw, info[1].As<Napi::Uint8Array>().Data(), 16);
  uint16_t lid = static_cast<uint16_t>(U32(info[2]));
  return N(info.Env(), attach ? ibv_attach_mcast(qp, &g, lid) : ibv_detach_mcast(qp, &g, lid));
}
Napi::Value AttachMcast(const Napi::CallbackInfo& info) { return Mcast(info, true); }
Napi::Value DetachMcast(const Napi::CallbackInfo& info) { return Mcast(info, false); }

// (qp, rate_limit, max_burst_sz, typical_pkt_sz, comp_mask) -> rc
Napi::Value ModifyQpRateLimit(const Napi::CallbackInfo& info) {
  auto* qp = Obj<ibv_qp>(info[0], K_QP);
  if (!qp) return N(info.Env(), EINVAL);
  ibv_qp_rate_limit_attr a;
  memset(&a, 0, sizeof a);
  a.rate_limit = U32(info[1]);
  a.max_burst_sz = U32(info[2]);
  a.typical_pkt_sz = static_cast<uint16_t>(U32(info[3]));
  a.comp_mask = U32(info[4]);
  return N(info.Env(), ibv_modify_qp_rate_limit(qp, &a));
}

// ---------------------------------------------------------------- XRC
// (ctx, comp_mask, fd, oflags) -> { ptr } or the errno.
Napi::Value OpenXrcd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(env, EINVAL);
  ibv_xrcd_init_attr a;
  memset(&a, 0, sizeof a);
  a.comp_mask = U32(info[1]);
  a.fd = I32(info[2]);
  a.oflags = I32(info[3]);
  errno = 0;
  ibv_xrcd* x = ibv_open_xrcd(ctx, &a);
  if (!x) return N(env, errno ? errno : EOPNOTSUPP);
  Track(x, K_XRCD, ctx);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, x));
  return o;
}

Napi::Value CloseXrcd(const Napi::CallbackInfo& info) {
  auto* x = Obj<ibv_xrcd>(info[0], K_XRCD);
  if (!x) return N(info.Env(), EINVAL);
  int r = ibv_close_xrcd(x);
  if (r == 0) Untrack(x);
  return N(info.Env(), r);
}

// (ctx, pd, xrcd, cq, max_wr, max_sge, srq_limit) -> { ptr, handle, max_wr, max_sge } or the errno.
Napi::Value CreateSrqXrc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  ibv_srq_init_attr_ex a;
  memset(&a, 0, sizeof a);
  a.pd = Obj<ibv_pd>(info[1], K_PD);
  a.xrcd = Obj<ibv_xrcd>(info[2], K_XRCD);
  a.cq = Obj<ibv_cq>(info[3], K_CQ);
  if (!ctx || !a.pd || !a.xrcd || !a.cq) return N(env, EINVAL);
  a.attr.max_wr = U32(info[4]);
  a.attr.max_sge = U32(info[5]);
  a.attr.srq_limit = U32(info[6]);
  a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
  a.srq_type = IBV_SRQT_XRC;
  errno = 0;
  ibv_srq* srq = ibv_create_srq_ex(ctx, &a);
  if (!srq) return N(env, errno ? errno : EOPNOTSUPP);
  Track(srq, K_SRQ, ctx);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, srq));
  o.Set("handle", N(env, srq->handle));
  o.Set("max_wr", N(env, a.attr.max_wr));
  o.Set("max_sge", N(env, a.attr.max_sge));
  return o;
}

// (srq) -> [rc, srq_num]
Napi::Value GetSrqNum(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* srq = Obj<ibv_srq>(info[0], K_SRQ);
  uint32_t num = 0;
  int r = srq ? ibv_get_srq_num(srq, &num) : EINVAL;
  auto out = Napi::Array::New(env, 2);
  out.Set(0u, N(env, r));
  out.Set(1u, N(env, num));
  return out;
}

}  // namespace

void rnic::InitExtended(Napi::Env env, Napi::Object exports) {
#define X(name, fn) exports.Set(name, Napi::Function::New(env, fn, name))
  X("queryDeviceEx", QueryDeviceEx);
  X("queryGidEx", QueryGidEx);
  X("queryRtValuesEx", QueryRtValuesEx);
  X("createCqEx", CreateCqEx);
  X("pollCqEx", PollCqEx);
  X("resizeCq", ResizeCq);
  X("modifyCq", ModifyCq);
  X("createQpEx", CreateQpEx);
  X("postSendEx", PostSendEx);
  X("regMrIova", RegMrIova);
  X("allocNullMr", AllocNullMr);
  X("reregMr", ReregMr);
  X("attachMcast", AttachMcast);
  X("detachMcast", DetachMcast);
  X("modifyQpRateLimit", ModifyQpRateLimit);
  X("openXrcd", OpenXrcd);
  X("closeXrcd", CloseXrcd);
  X("createSrqXrc", CreateSrqXrc);
  X("getSrqNum", GetSrqNum);
#undef X
}
