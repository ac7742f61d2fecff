// The rdma-core provider's native half: a thin Node-API layer over
// libibverbs: the classic verbs and the module's init (the extended verbs
// are in extended.cc). Every function maps to one libibverbs call; the TS
// side (src/driver/rdma-core/*.ts) owns the object model, the argument
// checks and the VerbsContextOps conventions.
//
// Every pointer argument is looked up in the registry of live objects
// (common.h) before libibverbs sees it: a destroyed handle or a wrong type
// fails the call with EINVAL (or -EINVAL where the result is a count), so
// no input from TypeScript reaches freed memory.
//
// Conventions of this file:
// - Pointers to libibverbs objects travel as JS numbers (x86-64 user
//   addresses are < 2^47, so a double holds them exactly).
// - A function that creates something returns an object, or a Number that
//   is the errno when the call failed. int verbs return the int.
// - The hot path (post_send, post_recv, post_srq_recv, poll_cq) takes no
//   JS objects: the TS side encodes work requests into, and decodes work
//   completions from, two scratch buffers registered once (setScratch), in
//   the record layouts described at PostSend / PollCq below.
// - Waiting is never a blocking call: the completion-channel and async
//   fds are O_NONBLOCK, and watchFd() calls back through libuv (uv_poll)
//   when one becomes readable.
#include "common.h"
#include <uv.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <string>

namespace rnic {

std::unordered_map<void*, Live> live;
uint8_t* wrBuf = nullptr;
size_t wrLen = 0;
uint8_t* wcBuf = nullptr;
size_t wcLen = 0;

}  // namespace rnic

namespace {
using namespace rnic;

int setNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return errno;
  return 0;
}

// ---------------------------------------------------------------- scratch
Napi::Reference<Napi::Uint8Array> wrRef, wcRef;

Napi::Value SetScratch(const Napi::CallbackInfo& info) {
  if (!IsBytes(info[0]) || !IsBytes(info[1])) return N(info.Env(), EINVAL);
  auto wr = info[0].As<Napi::Uint8Array>();
  auto wc = info[1].As<Napi::Uint8Array>();
  wrRef = Napi::Persistent(wr);
  wcRef = Napi::Persistent(wc);
  wrBuf = wr.Data();
  wrLen = wr.ByteLength();
  wcBuf = wc.Data();
  wcLen = wc.ByteLength();
  return info.Env().Undefined();
}

// ---------------------------------------------------------------- devices
// The newest list is kept, the one before it freed: a device is opened by
// name from the kept list (openDevice), so no JS object ever holds an
// ibv_device* that a later listing could have freed (a hot-removed device).
ibv_device** lastList = nullptr;

Napi::Value GetDeviceList(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  auto arr = Napi::Array::New(env);
  if (!list) return N(env, static_cast<double>(errno));
  if (lastList) ibv_free_device_list(lastList);
  lastList = list;
  for (int i = 0; i < n; i++) {
    ibv_device* d = list[i];
    auto o = Napi::Object::New(env);
    o.Set("ptr", N(env, d));
    o.Set("name", Napi::String::New(env, d->name));
    o.Set("dev_name", Napi::String::New(env, d->dev_name));
    o.Set("dev_path", Napi::String::New(env, d->dev_path));
    o.Set("ibdev_path", Napi::String::New(env, d->ibdev_path));
    o.Set("node_type", N(env, d->node_type));
    o.Set("transport_type", N(env, d->transport_type));
    o.Set("guid", Big(env, be64toh(ibv_get_device_guid(d))));
    o.Set("index", N(env, ibv_get_device_index(d)));
    arr.Set(i, o);
  }
  return arr;
}

// openDevice(name): the device of that name in the newest list, or ENODEV.
Napi::Value OpenDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) return N(env, static_cast<double>(EINVAL));
  std::string name = info[0].As<Napi::String>().Utf8Value();
  ibv_device* d = nullptr;
  for (ibv_device** p = lastList; p && *p; p++)
    if (name == ibv_get_device_name(*p)) d = *p;
  if (!d) return N(env, static_cast<double>(ENODEV));
  ibv_context* ctx = ibv_open_device(d);
  if (!ctx) return N(env, static_cast<double>(errno ? errno : ENODEV));
  int e = setNonBlocking(ctx->async_fd);
  if (e) {
    ibv_close_device(ctx);
    return N(env, static_cast<double>(e));
  }
  Track(ctx, K_CTX, ctx);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, ctx));
  o.Set("cmd_fd", N(env, ctx->cmd_fd));
  o.Set("async_fd", N(env, ctx->async_fd));
  o.Set("num_comp_vectors", N(env, ctx->num_comp_vectors));
  return o;
}

Napi::Value CloseDevice(const Napi::CallbackInfo& info) {
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(info.Env(), EINVAL);
  int r = ibv_close_device(ctx);
  if (r == 0) UntrackContext(ctx);
  return N(info.Env(), r);
}

Napi::Value QueryDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(env, EINVAL);
  ibv_device_attr a;
  memset(&a, 0, sizeof a);
  int r = ibv_query_device(ctx, &a);
  if (r) return N(env, r);
  return DeviceAttrToJs(env, a);
}

}  // namespace

Napi::Object rnic::DeviceAttrToJs(Napi::Env env, const ibv_device_attr& a) {
  auto o = Napi::Object::New(env);
  o.Set("fw_ver", Napi::String::New(env, a.fw_ver));
  o.Set("node_guid", Big(env, be64toh(a.node_guid)));
  o.Set("sys_image_guid", Big(env, be64toh(a.sys_image_guid)));
  o.Set("max_mr_size", Big(env, a.max_mr_size));
  o.Set("page_size_cap", Big(env, a.page_size_cap));
#define F(x) o.Set(#x, N(env, static_cast<double>(a.x)))
  F(vendor_id); F(vendor_part_id); F(hw_ver); F(max_qp); F(max_qp_wr); F(device_cap_flags); F(max_sge);
  F(max_sge_rd); F(max_cq); F(max_cqe); F(max_mr); F(max_pd); F(max_qp_rd_atom); F(max_ee_rd_atom);
  F(max_res_rd_atom); F(max_qp_init_rd_atom); F(max_ee_init_rd_atom); F(atomic_cap); F(max_ee); F(max_rdd);
  F(max_mw); F(max_raw_ipv6_qp); F(max_raw_ethy_qp); F(max_mcast_grp); F(max_mcast_qp_attach);
  F(max_total_mcast_qp_attach); F(max_ah); F(max_fmr); F(max_map_per_fmr); F(max_srq); F(max_srq_wr);
  F(max_srq_sge); F(max_pkeys); F(local_ca_ack_delay); F(phys_port_cnt);
#undef F
  return o;
}

namespace {

Napi::Value QueryPort(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(env, EINVAL);
  ibv_port_attr a;
  memset(&a, 0, sizeof a);
  int r = ibv_query_port(ctx, static_cast<uint8_t>(U32(info[1])), &a);
  if (r) return N(env, r);
  auto o = Napi::Object::New(env);
#define F(x) o.Set(#x, N(env, static_cast<double>(a.x)))
  F(state); F(max_mtu); F(active_mtu); F(gid_tbl_len); F(port_cap_flags); F(max_msg_sz); F(bad_pkey_cntr);
  F(qkey_viol_cntr); F(pkey_tbl_len); F(lid); F(sm_lid); F(lmc); F(max_vl_num); F(sm_sl); F(subnet_timeout);
  F(init_type_reply); F(active_width); F(active_speed); F(phys_state); F(link_layer); F(flags);
  F(port_cap_flags2);
#undef F
#ifdef IBV_PORT_ATTR_HAS_ACTIVE_SPEED_EX
  o.Set("active_speed_ex", N(env, static_cast<double>(a.active_speed_ex)));
#else
  o.Set("active_speed_ex", N(env, 0.0));
#endif
  return o;
}

Napi::Value QueryGid(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(env, EINVAL);
  ibv_gid g;
  int r = ibv_query_gid(ctx, static_cast<uint8_t>(U32(info[1])), I32(info[2]), &g);
  if (r) return N(env, r < 0 ? (errno ? errno : EINVAL) : r);
  auto b = Napi::Uint8Array::New(env, 16);
  memcpy(b.Data(), g.raw, 16);
  return b;
}

// Returns the P_Key in host order, or -errno.
Napi::Value QueryPkey(const Napi::CallbackInfo& info) {
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(info.Env(), -EINVAL);
  __be16 pk = 0;
  int r = ibv_query_pkey(ctx, static_cast<uint8_t>(U32(info[1])), I32(info[2]), &pk);
  if (r) return N(info.Env(), -(r < 0 ? (errno ? errno : EINVAL) : r));
  return N(info.Env(), ntohs(pk));
}

// ---------------------------------------------------------------- pd, mr, buffers
Napi::Value AllocPd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(env, EINVAL);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  if (!pd) return N(env, errno ? errno : ENOMEM);
  Track(pd, K_PD, ctx);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, pd));
  o.Set("handle", N(env, pd->handle));
  return o;
}

// Destroys a live object of kind k with fn, and forgets it when that succeeded.
template <class T>
Napi::Value Destroy(const Napi::CallbackInfo& info, Kind k, int (*fn)(T*)) {
  auto* o = Obj<T>(info[0], k);
  if (!o) return N(info.Env(), EINVAL);
  int r = fn(o);
  if (r == 0) Untrack(o);
  return N(info.Env(), r);
}

Napi::Value DeallocPd(const Napi::CallbackInfo& info) { return Destroy<ibv_pd>(info, K_PD, ibv_dealloc_pd); }

// Page-aligned, zeroed memory owned by the returned ArrayBuffer: freed when
// the last JS reference is gone (the TS side holds a reference while the
// buffer is registered, so registered memory is never freed under the HCA).
Napi::Value AllocBuf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber() || !info[1].IsNumber()) return N(env, EINVAL);
  int64_t len64 = info[0].As<Napi::Number>().Int64Value();
  int64_t align64 = info[1].As<Napi::Number>().Int64Value();
  if (len64 < 0 || align64 < 1 || align64 > (1 << 30) || (align64 & (align64 - 1))) return N(env, EINVAL);
  size_t len = static_cast<size_t>(len64);
  size_t align = static_cast<size_t>(align64);
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (align < page) align = page;
  size_t alloc = (len + page - 1) / page * page;
  if (alloc == 0) alloc = page;
  void* p = nullptr;
  int r = posix_memalign(&p, align, alloc);
  if (r) return N(env, r);
  memset(p, 0, alloc);
  return Napi::ArrayBuffer::New(env, p, len, [](Napi::Env, void* data) { free(data); });
}

}  // namespace

Napi::Object rnic::MrToJs(Napi::Env env, const ibv_mr* mr) {
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, mr));
  o.Set("addr", Big(env, reinterpret_cast<uintptr_t>(mr->addr)));
  o.Set("length", N(env, static_cast<double>(mr->length)));
  o.Set("handle", N(env, mr->handle));
  o.Set("lkey", N(env, mr->lkey));
  o.Set("rkey", N(env, mr->rkey));
  return o;
}

namespace {

Napi::Value RegMr(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* pd = Obj<ibv_pd>(info[0], K_PD);
  if (!pd || !IsBytes(info[1])) return N(env, EINVAL);
  auto ta = info[1].As<Napi::Uint8Array>();
  ibv_mr* mr = ibv_reg_mr(pd, ta.Data(), ta.ByteLength(), I32(info[2]));
  if (!mr) return N(env, errno ? errno : EINVAL);
  Track(mr, K_MR, pd->context);
  return MrToJs(env, mr);
}

Napi::Value DeregMr(const Napi::CallbackInfo& info) { return Destroy<ibv_mr>(info, K_MR, ibv_dereg_mr); }

// ---------------------------------------------------------------- memory windows
Napi::Value AllocMw(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* pd = Obj<ibv_pd>(info[0], K_PD);
  if (!pd) return N(env, EINVAL);
  ibv_mw* mw = ibv_alloc_mw(pd, static_cast<ibv_mw_type>(U32(info[1])));
  if (!mw) return N(env, errno ? errno : ENOMEM);
  Track(mw, K_MW, pd->context);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, mw));
  o.Set("rkey", N(env, mw->rkey));
  o.Set("handle", N(env, mw->handle));
  return o;
}

Napi::Value DeallocMw(const Napi::CallbackInfo& info) { return Destroy<ibv_mw>(info, K_MW, ibv_dealloc_mw); }

// ibv_bind_mw (type 1): (qp, mw, mr or 0, wr_id, send_flags, addr, length, access) -> [rc, mw->rkey after].
Napi::Value BindMw(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* qp = Obj<ibv_qp>(info[0], K_QP);
  auto* mw = Obj<ibv_mw>(info[1], K_MW);
  ibv_mr* mr = nullptr;
  auto out = Napi::Array::New(env, 2);
  if (!qp || !mw || !Opt(info[2], K_MR, &mr)) {
    out.Set(0u, N(env, EINVAL));
    out.Set(1u, N(env, 0.0));
    return out;
  }
  ibv_mw_bind b;
  memset(&b, 0, sizeof b);
  b.wr_id = U64(info[3]);
  b.send_flags = U32(info[4]);
  b.bind_info.mr = mr;
  b.bind_info.addr = U64(info[5]);
  b.bind_info.length = U64(info[6]);
  b.bind_info.mw_access_flags = U32(info[7]);
  int r = ibv_bind_mw(qp, mw, &b);
  out.Set(0u, N(env, r));
  out.Set(1u, N(env, mw->rkey));
  return out;
}

// The address of a view's first byte (what mr.addr is for a whole buffer).
Napi::Value AddrOf(const Napi::CallbackInfo& info) {
  if (!IsBytes(info[0])) return N(info.Env(), -EINVAL);
  auto ta = info[0].As<Napi::Uint8Array>();
  return Big(info.Env(), reinterpret_cast<uintptr_t>(ta.Data()));
}

// ---------------------------------------------------------------- channels, cqs
Napi::Value CreateCompChannel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(env, EINVAL);
  ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
  if (!ch) return N(env, errno ? errno : ENOMEM);
  int e = setNonBlocking(ch->fd);
  if (e) {
    ibv_destroy_comp_channel(ch);
    return N(env, e);
  }
  Track(ch, K_CH, ctx);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, ch));
  o.Set("fd", N(env, ch->fd));
  return o;
}

Napi::Value DestroyCompChannel(const Napi::CallbackInfo& info) {
  return Destroy<ibv_comp_channel>(info, K_CH, ibv_destroy_comp_channel);
}

Napi::Value CreateCq(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  ibv_comp_channel* ch = nullptr;
  if (!ctx || !Opt(info[2], K_CH, &ch)) return N(env, EINVAL);
  ibv_cq* cq = ibv_create_cq(ctx, I32(info[1]), nullptr, ch, I32(info[3]));
  if (!cq) return N(env, errno ? errno : ENOMEM);
  Track(cq, K_CQ, ctx);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, cq));
  o.Set("cqe", N(env, cq->cqe));
  o.Set("handle", N(env, cq->handle));
  return o;
}

Napi::Value DestroyCq(const Napi::CallbackInfo& info) { return Destroy<ibv_cq>(info, K_CQ, ibv_destroy_cq); }

Napi::Value ReqNotifyCq(const Napi::CallbackInfo& info) {
  auto* cq = Obj<ibv_cq>(info[0], K_CQ);
  if (!cq) return N(info.Env(), EINVAL);
  return N(info.Env(), ibv_req_notify_cq(cq, I32(info[1])));
}

// The CQ that has an event (its pointer), or -errno (-EAGAIN: none yet).
Napi::Value GetCqEvent(const Napi::CallbackInfo& info) {
  auto* ch = Obj<ibv_comp_channel>(info[0], K_CH);
  if (!ch) return N(info.Env(), -EINVAL);
  ibv_cq* cq = nullptr;
  void* cqctx = nullptr;
  if (ibv_get_cq_event(ch, &cq, &cqctx)) return N(info.Env(), -(errno ? errno : EIO));
  return N(info.Env(), cq);
}

Napi::Value AckCqEvents(const Napi::CallbackInfo& info) {
  auto* cq = Obj<ibv_cq>(info[0], K_CQ);
  if (cq) ibv_ack_cq_events(cq, U32(info[1]));
  return info.Env().Undefined();
}

// wc record, 48 bytes: u64 wr_id; u32 status, opcode, vendor_err, byte_len,
// imm_data (the raw 32 bits), qp_num, src_qp, wc_flags; u16 pkey_index,
// slid; u8 sl, dlid_path_bits.
constexpr size_t WC_REC = 48;
Napi::Value PollCq(const Napi::CallbackInfo& info) {
  auto* cq = Obj<ibv_cq>(info[0], K_CQ);
  if (!cq || !wcBuf) return N(info.Env(), -EINVAL);
  int n = I32(info[1]);
  int max = static_cast<int>(wcLen / WC_REC);
  if (n < 0) return N(info.Env(), -EINVAL);
  if (n > max) n = max;
  if (n > 64) n = 64;
  ibv_wc wc[64];
  int got = ibv_poll_cq(cq, n, wc);
  for (int i = 0; i < got; i++) {
    uint8_t* r = wcBuf + i * WC_REC;
    const ibv_wc& w = wc[i];
    uint32_t imm = w.imm_data;
    memcpy(r, &w.wr_id, 8);
    uint32_t u[8] = {static_cast<uint32_t>(w.status), static_cast<uint32_t>(w.opcode), w.vendor_err, w.byte_len, imm,
                     w.qp_num, w.src_qp, w.wc_flags};
    memcpy(r + 8, u, 32);
    uint16_t s[2] = {w.pkey_index, w.slid};
    memcpy(r + 40, s, 4);
    r[44] = w.sl;
    r[45] = w.dlid_path_bits;
  }
  return N(info.Env(), got);
}

// ---------------------------------------------------------------- srq
Napi::Value CreateSrq(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* pd = Obj<ibv_pd>(info[0], K_PD);
  if (!pd) return N(env, EINVAL);
  ibv_srq_init_attr a;
  memset(&a, 0, sizeof a);
  a.attr.max_wr = U32(info[1]);
  a.attr.max_sge = U32(info[2]);
  a.attr.srq_limit = U32(info[3]);
  ibv_srq* srq = ibv_create_srq(pd, &a);
  if (!srq) return N(env, errno ? errno : ENOMEM);
  Track(srq, K_SRQ, pd->context);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, srq));
  o.Set("handle", N(env, srq->handle));
  o.Set("max_wr", N(env, a.attr.max_wr));
  o.Set("max_sge", N(env, a.attr.max_sge));
  return o;
}

Napi::Value ModifySrq(const Napi::CallbackInfo& info) {
  auto* srq = Obj<ibv_srq>(info[0], K_SRQ);
  if (!srq) return N(info.Env(), EINVAL);
  ibv_srq_attr a;
  a.max_wr = U32(info[1]);
  a.max_sge = U32(info[2]);
  a.srq_limit = U32(info[3]);
  return N(info.Env(), ibv_modify_srq(srq, &a, I32(info[4])));
}

Napi::Value QuerySrq(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* srq = Obj<ibv_srq>(info[0], K_SRQ);
  if (!srq) return N(env, EINVAL);
  ibv_srq_attr a;
  memset(&a, 0, sizeof a);
  int r = ibv_query_srq(srq, &a);
  if (r) return N(env, r);
  auto arr = Napi::Array::New(env, 3);
  arr.Set(0u, N(env, a.max_wr));
  arr.Set(1u, N(env, a.max_sge));
  arr.Set(2u, N(env, a.srq_limit));
  return arr;
}

Napi::Value DestroySrq(const Napi::CallbackInfo& info) { return Destroy<ibv_srq>(info, K_SRQ, ibv_destroy_srq); }

// ---------------------------------------------------------------- qp
void ahAttrFromJs(const Napi::Value& v, ibv_ah_attr* a) {
  memset(a, 0, sizeof *a);
  if (!v.IsObject()) return;
  auto o = v.As<Napi::Object>();
  a->dlid = static_cast<uint16_t>(U32(Field(o, "dlid")));
  a->sl = static_cast<uint8_t>(U32(Field(o, "sl")));
  a->src_path_bits = static_cast<uint8_t>(U32(Field(o, "src_path_bits")));
  a->static_rate = static_cast<uint8_t>(U32(Field(o, "static_rate")));
  a->is_global = static_cast<uint8_t>(U32(Field(o, "is_global")));
  a->port_num = static_cast<uint8_t>(U32(Field(o, "port_num")));
  auto g = Field(o, "grh");
  if (g.IsObject()) {
    auto go = g.As<Napi::Object>();
    a->grh.flow_label = U32(Field(go, "flow_label"));
    a->grh.sgid_index = static_cast<uint8_t>(U32(Field(go, "sgid_index")));
    a->grh.hop_limit = static_cast<uint8_t>(U32(Field(go, "hop_limit")));
    a->grh.traffic_class = static_cast<uint8_t>(U32(Field(go, "traffic_class")));
    auto d = Field(go, "dgid");
    if (d.IsObject()) {
      auto raw = Field(d.As<Napi::Object>(), "raw");
      if (raw.IsTypedArray()) {
        auto ta = raw.As<Napi::Uint8Array>();
        memcpy(a->grh.dgid.raw, ta.Data(), ta.ByteLength() < 16 ? ta.ByteLength() : 16);
      }
    }
  }
}

Napi::Object ahAttrToJs(Napi::Env env, const ibv_ah_attr& a) {
  auto o = Napi::Object::New(env);
  auto g = Napi::Object::New(env);
  auto gid = Napi::Object::New(env);
  auto raw = Napi::Uint8Array::New(env, 16);
  memcpy(raw.Data(), a.grh.dgid.raw, 16);
  gid.Set("raw", raw);
  g.Set("dgid", gid);
  g.Set("flow_label", N(env, a.grh.flow_label));
  g.Set("sgid_index", N(env, a.grh.sgid_index));
  g.Set("hop_limit", N(env, a.grh.hop_limit));
  g.Set("traffic_class", N(env, a.grh.traffic_class));
  o.Set("grh", g);
  o.Set("dlid", N(env, a.dlid));
  o.Set("sl", N(env, a.sl));
  o.Set("src_path_bits", N(env, a.src_path_bits));
  o.Set("static_rate", N(env, a.static_rate));
  o.Set("is_global", N(env, a.is_global));
  o.Set("port_num", N(env, a.port_num));
  return o;
}

}  // namespace

Napi::Object rnic::CapToJs(Napi::Env env, const ibv_qp_cap& c) {
  auto o = Napi::Object::New(env);
  o.Set("max_send_wr", N(env, c.max_send_wr));
  o.Set("max_recv_wr", N(env, c.max_recv_wr));
  o.Set("max_send_sge", N(env, c.max_send_sge));
  o.Set("max_recv_sge", N(env, c.max_recv_sge));
  o.Set("max_inline_data", N(env, c.max_inline_data));
  return o;
}

namespace {

// (pd, send_cq, recv_cq, srq, qp_type, sq_sig_all, max_send_wr, max_recv_wr,
//  max_send_sge, max_recv_sge, max_inline_data)
Napi::Value CreateQp(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* pd = Obj<ibv_pd>(info[0], K_PD);
  ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.send_cq = Obj<ibv_cq>(info[1], K_CQ);
  a.recv_cq = Obj<ibv_cq>(info[2], K_CQ);
  if (!pd || !a.send_cq || !a.recv_cq || !Opt(info[3], K_SRQ, &a.srq)) return N(env, EINVAL);
  a.qp_type = static_cast<ibv_qp_type>(U32(info[4]));
  a.sq_sig_all = I32(info[5]);
  a.cap.max_send_wr = U32(info[6]);
  a.cap.max_recv_wr = U32(info[7]);
  a.cap.max_send_sge = U32(info[8]);
  a.cap.max_recv_sge = U32(info[9]);
  a.cap.max_inline_data = U32(info[10]);
  ibv_qp* qp = ibv_create_qp(pd, &a);
  if (!qp) return N(env, errno ? errno : ENOMEM);
  Track(qp, K_QP, pd->context);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, qp));
  o.Set("qp_num", N(env, qp->qp_num));
  o.Set("handle", N(env, qp->handle));
  o.Set("cap", CapToJs(env, a.cap));
  return o;
}

Napi::Value ModifyQp(const Napi::CallbackInfo& info) {
  auto* qp = Obj<ibv_qp>(info[0], K_QP);
  if (!qp || !info[1].IsObject()) return N(info.Env(), EINVAL);
  auto o = info[1].As<Napi::Object>();
  int mask = I32(info[2]);
  ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = static_cast<ibv_qp_state>(U32(Field(o, "qp_state")));
  a.cur_qp_state = static_cast<ibv_qp_state>(U32(Field(o, "cur_qp_state")));
  a.path_mtu = static_cast<ibv_mtu>(U32(Field(o, "path_mtu")));
  a.path_mig_state = static_cast<ibv_mig_state>(U32(Field(o, "path_mig_state")));
  a.qkey = U32(Field(o, "qkey"));
  a.rq_psn = U32(Field(o, "rq_psn"));
  a.sq_psn = U32(Field(o, "sq_psn"));
  a.dest_qp_num = U32(Field(o, "dest_qp_num"));
  a.qp_access_flags = U32(Field(o, "qp_access_flags"));
  auto cap = Field(o, "cap");
  if (cap.IsObject()) {
    auto c = cap.As<Napi::Object>();
    a.cap.max_send_wr = U32(Field(c, "max_send_wr"));
    a.cap.max_recv_wr = U32(Field(c, "max_recv_wr"));
    a.cap.max_send_sge = U32(Field(c, "max_send_sge"));
    a.cap.max_recv_sge = U32(Field(c, "max_recv_sge"));
    a.cap.max_inline_data = U32(Field(c, "max_inline_data"));
  }
  ahAttrFromJs(Field(o, "ah_attr"), &a.ah_attr);
  ahAttrFromJs(Field(o, "alt_ah_attr"), &a.alt_ah_attr);
  a.pkey_index = static_cast<uint16_t>(U32(Field(o, "pkey_index")));
  a.alt_pkey_index = static_cast<uint16_t>(U32(Field(o, "alt_pkey_index")));
  a.en_sqd_async_notify = static_cast<uint8_t>(U32(Field(o, "en_sqd_async_notify")));
  a.max_rd_atomic = static_cast<uint8_t>(U32(Field(o, "max_rd_atomic")));
  a.max_dest_rd_atomic = static_cast<uint8_t>(U32(Field(o, "max_dest_rd_atomic")));
  a.min_rnr_timer = static_cast<uint8_t>(U32(Field(o, "min_rnr_timer")));
  a.port_num = static_cast<uint8_t>(U32(Field(o, "port_num")));
  a.timeout = static_cast<uint8_t>(U32(Field(o, "timeout")));
  a.retry_cnt = static_cast<uint8_t>(U32(Field(o, "retry_cnt")));
  a.rnr_retry = static_cast<uint8_t>(U32(Field(o, "rnr_retry")));
  a.alt_port_num = static_cast<uint8_t>(U32(Field(o, "alt_port_num")));
  a.alt_timeout = static_cast<uint8_t>(U32(Field(o, "alt_timeout")));
  a.rate_limit = U32(Field(o, "rate_limit"));
  return N(info.Env(), ibv_modify_qp(qp, &a, mask));
}

Napi::Value QueryQp(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* qp = Obj<ibv_qp>(info[0], K_QP);
  if (!qp) return N(env, EINVAL);
  ibv_qp_attr a;
  ibv_qp_init_attr ia;
  memset(&a, 0, sizeof a);
  memset(&ia, 0, sizeof ia);
  int r = ibv_query_qp(qp, &a, I32(info[1]), &ia);
  if (r) return N(env, r);
  auto o = Napi::Object::New(env);
#define F(x) o.Set(#x, N(env, static_cast<double>(a.x)))
  F(qp_state); F(cur_qp_state); F(path_mtu); F(path_mig_state); F(qkey); F(rq_psn); F(sq_psn); F(dest_qp_num);
  F(qp_access_flags); F(pkey_index); F(alt_pkey_index); F(en_sqd_async_notify); F(sq_draining); F(max_rd_atomic);
  F(max_dest_rd_atomic); F(min_rnr_timer); F(port_num); F(timeout); F(retry_cnt); F(rnr_retry); F(alt_port_num);
  F(alt_timeout); F(rate_limit);
#undef F
  o.Set("cap", CapToJs(env, a.cap));
  o.Set("ah_attr", ahAttrToJs(env, a.ah_attr));
  o.Set("alt_ah_attr", ahAttrToJs(env, a.alt_ah_attr));
  auto init = Napi::Object::New(env);
  init.Set("cap", CapToJs(env, ia.cap));
  init.Set("qp_type", N(env, ia.qp_type));
  init.Set("sq_sig_all", N(env, ia.sq_sig_all));
  auto res = Napi::Object::New(env);
  res.Set("attr", o);
  res.Set("init", init);
  return res;
}

Napi::Value DestroyQp(const Napi::CallbackInfo& info) { return Destroy<ibv_qp>(info, K_QP, ibv_destroy_qp); }

// ---------------------------------------------------------------- posting
// The wr scratch starts with an 8-byte header (u32 index of the bad WR),
// then the records. Send record, 72 bytes + 16 per SGE:
//   u64 wr_id; u32 opcode, send_flags, num_sge, imm_data|invalidate_rkey;
//   u64 remote_addr; u32 rkey, remote_qpn, remote_qkey, pad;
//   u64 compare_add, swap, ah; then SGEs (u64 addr; u32 length, lkey).
// Recv record, 16 bytes + 16 per SGE: u64 wr_id; u32 num_sge, pad; SGEs.
}  // namespace

int rnic::DecodeSend(ibv_qp* qp, int n, ibv_send_wr* wr, ibv_sge* sge, SendExtra* extra, int* badIdx) {
  int nsge = 0;
  const uint8_t* r = wrBuf + 8;
  const uint8_t* end = wrBuf + wrLen;
  *badIdx = 0;
  for (int i = 0; i < n; i++) {
    *badIdx = i;
    if (r + SEND_REC > end) return EINVAL;
    ibv_send_wr& w = wr[i];
    memset(&w, 0, sizeof w);
    uint32_t u[4];
    memcpy(&w.wr_id, r, 8);
    memcpy(u, r + 8, 16);
    w.opcode = static_cast<ibv_wr_opcode>(u[0]);
    w.send_flags = u[1];
    w.num_sge = static_cast<int>(u[2]);
    w.imm_data = u[3];  // the union: invalidate_rkey shares it
    uint64_t raddr, cmp, swp, ah;
    uint32_t v[4];
    memcpy(&raddr, r + 24, 8);
    memcpy(v, r + 32, 16);
    memcpy(&cmp, r + 48, 8);
    memcpy(&swp, r + 56, 8);
    memcpy(&ah, r + 64, 8);
    extra[i] = SendExtra{cmp, swp, v[3]};
    void* ahp = reinterpret_cast<void*>(static_cast<uintptr_t>(ah));
    void* mrp = reinterpret_cast<void*>(static_cast<uintptr_t>(cmp));
    if (qp->qp_type == IBV_QPT_UD) {
      // The provider copies the AH's address vector: it must be a live AH.
      if (!Find(ahp, K_AH)) return EINVAL;
      w.wr.ud.ah = static_cast<ibv_ah*>(ahp);
      w.wr.ud.remote_qpn = v[1];
      w.wr.ud.remote_qkey = v[2];
    } else if (w.opcode == IBV_WR_BIND_MW) {
      // Type 2 bind: mw in the AH slot, mr in compare, length in swap, rkey / access in v[0] / v[1],
      // and in v[2] the window's key as the application holds it (ibv_mw.rkey, a field C programs
      // may write: the provider names the window by it).
      if (!Find(ahp, K_MW) || (mrp && !Find(mrp, K_MR))) return EINVAL;
      w.bind_mw.mw = static_cast<ibv_mw*>(ahp);
      w.bind_mw.mw->rkey = v[2];
      w.bind_mw.rkey = v[0];
      w.bind_mw.bind_info.mr = static_cast<ibv_mr*>(mrp);
      w.bind_mw.bind_info.addr = raddr;
      w.bind_mw.bind_info.length = swp;
      w.bind_mw.bind_info.mw_access_flags = v[1];
    } else if (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      w.wr.atomic.remote_addr = raddr;
      w.wr.atomic.rkey = v[0];
      w.wr.atomic.compare_add = cmp;
      w.wr.atomic.swap = swp;
    } else {
      w.wr.rdma.remote_addr = raddr;
      w.wr.rdma.rkey = v[0];
    }
    r += SEND_REC;
    if (w.num_sge < 0 || nsge + w.num_sge > MAX_SGE_TOTAL || r + 16 * w.num_sge > end) return EINVAL;
    w.sg_list = w.num_sge ? &sge[nsge] : nullptr;
    for (int j = 0; j < w.num_sge; j++, r += 16) {
      memcpy(&sge[nsge].addr, r, 8);
      memcpy(&sge[nsge].length, r + 8, 4);
      memcpy(&sge[nsge].lkey, r + 12, 4);
      nsge++;
    }
    w.next = i + 1 < n ? &wr[i + 1] : nullptr;
  }
  return 0;
}

namespace {

Napi::Value PostSend(const Napi::CallbackInfo& info) {
  auto* qp = Obj<ibv_qp>(info[0], K_QP);
  int n = I32(info[1]);
  if (!qp || n < 1 || n > MAX_WR || !wrBuf) return N(info.Env(), EINVAL);
  ibv_send_wr wr[MAX_WR];
  ibv_sge sge[MAX_SGE_TOTAL];
  SendExtra extra[MAX_WR];
  int badIdx = 0;
  int e = DecodeSend(qp, n, wr, sge, extra, &badIdx);
  if (e) {
    uint32_t b = static_cast<uint32_t>(badIdx);
    memcpy(wrBuf, &b, 4);
    return N(info.Env(), e);
  }
  ibv_send_wr* bad = nullptr;
  int ret = ibv_post_send(qp, wr, &bad);
  uint32_t badI = ret && bad ? static_cast<uint32_t>(bad - wr) : 0;
  memcpy(wrBuf, &badI, 4);
  return N(info.Env(), ret);
}

int decodeRecv(int n, ibv_recv_wr* wr, ibv_sge* sge) {
  int nsge = 0;
  const uint8_t* r = wrBuf + 8;
  const uint8_t* end = wrBuf + wrLen;
  for (int i = 0; i < n; i++) {
    if (r + 16 > end) return EINVAL;
    ibv_recv_wr& w = wr[i];
    memset(&w, 0, sizeof w);
    memcpy(&w.wr_id, r, 8);
    uint32_t ns;
    memcpy(&ns, r + 8, 4);
    w.num_sge = static_cast<int>(ns);
    r += 16;
    if (w.num_sge < 0 || nsge + w.num_sge > MAX_SGE_TOTAL || r + 16 * w.num_sge > end) return EINVAL;
    w.sg_list = w.num_sge ? &sge[nsge] : nullptr;
    for (int j = 0; j < w.num_sge; j++, r += 16) {
      memcpy(&sge[nsge].addr, r, 8);
      memcpy(&sge[nsge].length, r + 8, 4);
      memcpy(&sge[nsge].lkey, r + 12, 4);
      nsge++;
    }
    w.next = i + 1 < n ? &wr[i + 1] : nullptr;
  }
  return 0;
}

Napi::Value PostRecv(const Napi::CallbackInfo& info) {
  int n = I32(info[1]);
  bool srq = info[2].ToBoolean();
  void* target = srq ? static_cast<void*>(Obj<ibv_srq>(info[0], K_SRQ)) : static_cast<void*>(Obj<ibv_qp>(info[0], K_QP));
  if (!target || n < 1 || n > MAX_WR || !wrBuf) return N(info.Env(), EINVAL);
  ibv_recv_wr wr[MAX_WR];
  ibv_sge sge[MAX_SGE_TOTAL];
  int e = decodeRecv(n, wr, sge);
  if (e) return N(info.Env(), e);
  ibv_recv_wr* bad = nullptr;
  int ret = srq ? ibv_post_srq_recv(static_cast<ibv_srq*>(target), wr, &bad) : ibv_post_recv(static_cast<ibv_qp*>(target), wr, &bad);
  uint32_t badIdx = ret && bad ? static_cast<uint32_t>(bad - wr) : 0;
  memcpy(wrBuf, &badIdx, 4);
  return N(info.Env(), ret);
}

// ---------------------------------------------------------------- ah
Napi::Value CreateAh(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* pd = Obj<ibv_pd>(info[0], K_PD);
  if (!pd) return N(env, EINVAL);
  ibv_ah_attr a;
  ahAttrFromJs(info[1], &a);
  ibv_ah* ah = ibv_create_ah(pd, &a);
  if (!ah) return N(env, errno ? errno : EINVAL);
  Track(ah, K_AH, pd->context);
  auto o = Napi::Object::New(env);
  o.Set("ptr", N(env, ah));
  o.Set("handle", N(env, ah->handle));
  return o;
}

Napi::Value DestroyAh(const Napi::CallbackInfo& info) { return Destroy<ibv_ah>(info, K_AH, ibv_destroy_ah); }

// ---------------------------------------------------------------- async events
// {event_type, ptr (cq/qp/srq/wq), port_num}, or -errno (-EAGAIN: none yet).
Napi::Value GetAsyncEvent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Obj<ibv_context>(info[0], K_CTX);
  if (!ctx) return N(env, -EINVAL);
  ibv_async_event ev;
  if (ibv_get_async_event(ctx, &ev)) return N(env, -(errno ? errno : EIO));
  auto o = Napi::Object::New(env);
  o.Set("event_type", N(env, ev.event_type));
  switch (ev.event_type) {
    case IBV_EVENT_CQ_ERR:
      o.Set("kind", Napi::String::New(env, "cq"));
      o.Set("ptr", N(env, ev.element.cq));
      break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      o.Set("kind", Napi::String::New(env, "srq"));
      o.Set("ptr", N(env, ev.element.srq));
      break;
    case IBV_EVENT_WQ_FATAL:
      o.Set("kind", Napi::String::New(env, "wq"));
      o.Set("ptr", N(env, ev.element.wq));
      break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
      o.Set("kind", Napi::String::New(env, "port"));
      o.Set("port_num", N(env, ev.element.port_num));
      break;
    case IBV_EVENT_DEVICE_FATAL:
      o.Set("kind", Napi::String::New(env, "device"));
      break;
    default:
      o.Set("kind", Napi::String::New(env, "qp"));
      o.Set("ptr", N(env, ev.element.qp));
      break;
  }
  return o;
}

// (event_type, kind, ptr|port_num): rebuilds the event and acks it.
Napi::Value AckAsyncEvent(const Napi::CallbackInfo& info) {
  ibv_async_event ev;
  memset(&ev, 0, sizeof ev);
  ev.event_type = static_cast<ibv_event_type>(U32(info[0]));
  if (!info[1].IsString()) return info.Env().Undefined();
  std::string kind = info[1].As<Napi::String>().Utf8Value();
  // The acknowledgement counts on the object: only a live one may be named.
  bool ok = true;
  if (kind == "port") ev.element.port_num = I32(info[2]);
  else if (kind == "cq") ok = (ev.element.cq = Obj<ibv_cq>(info[2], K_CQ)) != nullptr;
  else if (kind == "srq") ok = (ev.element.srq = Obj<ibv_srq>(info[2], K_SRQ)) != nullptr;
  else if (kind == "wq") ok = false;  // no WQs are created through this addon
  else if (kind == "qp") ok = (ev.element.qp = Obj<ibv_qp>(info[2], K_QP)) != nullptr;
  if (ok) ibv_ack_async_event(&ev);
  return info.Env().Undefined();
}

// ---------------------------------------------------------------- fd readiness
struct Watch {
  uv_poll_t handle;
  Napi::FunctionReference cb;
  Napi::AsyncContext* actx;
  napi_env env;
  uint32_t id;
  bool closing;
};
std::unordered_map<uint32_t, Watch*> watches;
uint32_t nextWatch = 1;

void onClosed(uv_handle_t* h) {
  auto* w = static_cast<Watch*>(h->data);
  delete w->actx;
  w->cb.Reset();
  delete w;
}

void stopWatch(Watch* w) {
  if (w->closing) return;
  w->closing = true;
  watches.erase(w->id);
  uv_poll_stop(&w->handle);
  uv_close(reinterpret_cast<uv_handle_t*>(&w->handle), onClosed);
}

void onReadable(uv_poll_t* h, int status, int events) {
  auto* w = static_cast<Watch*>(h->data);
  if (w->closing) return;
  Napi::Env env(w->env);
  Napi::HandleScope scope(env);
  Napi::FunctionReference cb = std::move(w->cb);
  Napi::AsyncContext* actx = w->actx;
  w->actx = nullptr;
  stopWatch(w);
  // MakeCallback: Node drains the microtask queue afterwards, so the
  // Promise the TS side resolves here settles now, not at some later tick.
  cb.MakeCallback(env.Global(), {Napi::Number::New(env, status)}, *actx);
  delete actx;
}

// watchFd(fd, cb): cb(status) once, when fd is readable (status 0) or the
// poll failed (a negative libuv status). Returns an id for unwatchFd.
Napi::Value WatchFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber() || !info[1].IsFunction()) return N(env, UV_EINVAL);
  int fd = I32(info[0]);
  uv_loop_t* loop = nullptr;
  napi_get_uv_event_loop(env, &loop);
  auto* w = new Watch();
  w->env = env;
  w->closing = false;
  w->id = nextWatch++;
  int r = uv_poll_init(loop, &w->handle, fd);
  if (r) {
    delete w;
    return N(env, r);
  }
  w->handle.data = w;
  w->cb = Napi::Persistent(info[1].As<Napi::Function>());
  w->actx = new Napi::AsyncContext(env, "rnic_rdma_core_watch");
  r = uv_poll_start(&w->handle, UV_READABLE, onReadable);
  if (r) {
    w->closing = true;
    uv_close(reinterpret_cast<uv_handle_t*>(&w->handle), onClosed);
    return N(env, r);
  }
  watches[w->id] = w;
  return N(env, w->id);
}

// Stops a watch without calling its callback (the TS side settles it).
Napi::Value UnwatchFd(const Napi::CallbackInfo& info) {
  auto it = watches.find(U32(info[0]));
  if (it != watches.end()) stopWatch(it->second);
  return info.Env().Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
#define X(name, fn) exports.Set(name, Napi::Function::New(env, fn, name))
  X("setScratch", SetScratch);
  X("getDeviceList", GetDeviceList);
  X("openDevice", OpenDevice);
  X("closeDevice", CloseDevice);
  X("queryDevice", QueryDevice);
  X("queryPort", QueryPort);
  X("queryGid", QueryGid);
  X("queryPkey", QueryPkey);
  X("allocPd", AllocPd);
  X("deallocPd", DeallocPd);
  X("allocBuf", AllocBuf);
  X("regMr", RegMr);
  X("deregMr", DeregMr);
  X("allocMw", AllocMw);
  X("deallocMw", DeallocMw);
  X("bindMw", BindMw);
  X("addrOf", AddrOf);
  X("createCompChannel", CreateCompChannel);
  X("destroyCompChannel", DestroyCompChannel);
  X("createCq", CreateCq);
  X("destroyCq", DestroyCq);
  X("reqNotifyCq", ReqNotifyCq);
  X("getCqEvent", GetCqEvent);
  X("ackCqEvents", AckCqEvents);
  X("pollCq", PollCq);
  X("createSrq", CreateSrq);
  X("modifySrq", ModifySrq);
  X("querySrq", QuerySrq);
  X("destroySrq", DestroySrq);
  X("createQp", CreateQp);
  X("modifyQp", ModifyQp);
  X("queryQp", QueryQp);
  X("destroyQp", DestroyQp);
  X("postSend", PostSend);
  X("postRecv", PostRecv);
  X("createAh", CreateAh);
  X("destroyAh", DestroyAh);
  X("getAsyncEvent", GetAsyncEvent);
  X("ackAsyncEvent", AckAsyncEvent);
  X("watchFd", WatchFd);
  X("unwatchFd", UnwatchFd);
#undef X
  InitExtended(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(rnic_rdma_core, Init)
