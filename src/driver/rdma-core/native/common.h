// What the addon's two halves share (rdma_core.cc: the classic verbs and
// the module's init; extended.cc: the extended verbs): value conversions,
// the registry of live libibverbs objects, the scratch buffers and the
// send-record decoder.
//
// The registry is what keeps bad input from TypeScript from crashing the
// process: every object the addon creates is entered with its kind and
// context, removed when destroyed (or when its context is closed), and
// every pointer argument is looked up before libibverbs sees it. A pointer
// that is not live, or is of another kind, makes the call fail with EINVAL
// instead of reaching freed memory or a NULL function pointer.
#pragma once
#include <napi.h>
#include <infiniband/verbs.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unordered_map>

namespace rnic {

inline void* P(const Napi::Value& v) {
  if (!v.IsNumber()) return nullptr;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(v.As<Napi::Number>().Int64Value()));
}
inline Napi::Number N(Napi::Env env, const void* p) {
  return Napi::Number::New(env, static_cast<double>(reinterpret_cast<uintptr_t>(p)));
}
inline Napi::Number N(Napi::Env env, double v) { return Napi::Number::New(env, v); }
inline uint32_t U32(const Napi::Value& v) { return v.IsNumber() ? v.As<Napi::Number>().Uint32Value() : 0; }
inline int32_t I32(const Napi::Value& v) { return v.IsNumber() ? v.As<Napi::Number>().Int32Value() : 0; }
inline uint64_t U64(const Napi::Value& v) {
  if (v.IsBigInt()) {
    bool lossless;
    return v.As<Napi::BigInt>().Uint64Value(&lossless);
  }
  if (v.IsNumber()) return static_cast<uint64_t>(v.As<Napi::Number>().Int64Value());
  return 0;
}
inline Napi::Value Big(Napi::Env env, uint64_t v) { return Napi::BigInt::New(env, v); }
inline Napi::Value Field(const Napi::Object& o, const char* k) { return o.Get(k); }
inline bool IsBytes(const Napi::Value& v) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array;
}

// ---------------------------------------------------------------- registry
enum Kind : uint8_t { K_CTX = 1, K_PD, K_MR, K_MW, K_CH, K_CQ, K_SRQ, K_QP, K_AH, K_XRCD };

struct Live {
  Kind kind;
  /** A CQ from ibv_create_cq_ex / a QP from ibv_create_qp_ex with send_ops_flags. */
  bool ex;
  ibv_context* ctx;
  /** ex CQ: its wc_flags; ex QP: its send_ops_flags. */
  uint64_t flags;
};

extern std::unordered_map<void*, Live> live;

inline void Track(void* p, Kind k, ibv_context* ctx, bool ex = false, uint64_t flags = 0) { live[p] = Live{k, ex, ctx, flags}; }
inline void Untrack(void* p) { live.erase(p); }
/** Everything of a closed context goes with it. */
inline void UntrackContext(ibv_context* ctx) {
  for (auto it = live.begin(); it != live.end();) it = it->second.ctx == ctx ? live.erase(it) : std::next(it);
}
inline const Live* Find(void* p, Kind k) {
  auto it = live.find(p);
  return it != live.end() && it->second.kind == k ? &it->second : nullptr;
}
/** The live object of kind k the value names, or nullptr. */
template <class T>
T* Obj(const Napi::Value& v, Kind k) {
  void* p = P(v);
  return p && Find(p, k) ? static_cast<T*>(p) : nullptr;
}
/** An optional object: 0 is none (true, *out = nullptr); otherwise it must be live. */
template <class T>
bool Opt(const Napi::Value& v, Kind k, T** out) {
  void* p = P(v);
  *out = nullptr;
  if (!p) return !v.IsNumber() ? v.IsUndefined() || v.IsNull() : true;
  if (!Find(p, k)) return false;
  *out = static_cast<T*>(p);
  return true;
}

// ---------------------------------------------------------------- scratch
extern uint8_t* wrBuf;
extern size_t wrLen;
extern uint8_t* wcBuf;
extern size_t wcLen;

constexpr int MAX_WR = 64;
constexpr int MAX_SGE_TOTAL = 512;
constexpr size_t SEND_REC = 72;

/** A send record's slots that ibv_send_wr has no room for in every opcode (the new post API's ATOMIC_WRITE bytes). */
struct SendExtra {
  uint64_t compare;
  uint64_t swap;
  uint32_t pad;
};

/**
 * Decodes n send records from the wr scratch (layout: rdma_core.cc,
 * PostSend) into wr[0..n), sge[] and extra[0..n), checking every object
 * pointer in them against the registry. 0, or EINVAL with *badIdx the
 * bad record.
 */
int DecodeSend(ibv_qp* qp, int n, ibv_send_wr* wr, ibv_sge* sge, SendExtra* extra, int* badIdx);

void InitExtended(Napi::Env env, Napi::Object exports);
Napi::Object DeviceAttrToJs(Napi::Env env, const ibv_device_attr& a);
Napi::Object CapToJs(Napi::Env env, const ibv_qp_cap& c);
Napi::Object MrToJs(Napi::Env env, const ibv_mr* mr);

}  // namespace rnic
