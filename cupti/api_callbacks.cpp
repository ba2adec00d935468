#include "api_callbacks.h"

#include <dlfcn.h>

#include <atomic>

#include "api_callback_translation.h"
#include "hook_support.h"
#include "recorder.h"

namespace vramtrace::cupti {
namespace {

using preload::ReentryGuard;
using Action = CallbackOutcome::Action;

// A runtime call enters the driver on the same thread (cudaMalloc -> cuMemAlloc_v2), and CUPTI
// reports both. The runtime's is the one the program made: driver callbacks inside a runtime
// memory call are left out, as the shim records such a call once.
thread_local int t_runtime_depth = 0;
// The free this thread recorded on entry, for a FreeFailed on exit of the same call.
thread_local uint64_t t_free_seq = 0;
thread_local uint32_t t_free_correlation = 0;

std::atomic<void*> g_cu_ctx_get_device{nullptr};

// The device of the calling thread's context, as the shim's driver hooks ask it. libcuda is
// loaded already: it is what loaded us.
int32_t context_device() {
  using Fn = int (*)(int*);
  void* fn = g_cu_ctx_get_device.load(std::memory_order_relaxed);
  if (fn == nullptr) {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda == nullptr) return -1;
    fn = dlsym(cuda, "cuCtxGetDevice");
    dlclose(cuda);
    if (fn == nullptr) return -1;
    g_cu_ctx_get_device.store(fn, std::memory_order_relaxed);
  }
  int device = -1;
  return reinterpret_cast<Fn>(fn)(&device) == 0 ? device : -1;
}

void apply(const CallbackOutcome& outcome, uint32_t correlation_id) {
  switch (outcome.action) {
    case Action::kNone:
      return;
    case Action::kRecordAlloc: {
      preload::AllocEvent e = outcome.alloc;
      preload::record_alloc_outcome(e, &context_device);
      return;
    }
    case Action::kRecordFree: {
      preload::FreeEvent e = outcome.free;
      t_free_seq = preload::record_free(e);
      t_free_correlation = correlation_id;
      return;
    }
    case Action::kFreeFailed:
      if (t_free_seq != 0 && t_free_correlation == correlation_id)
        preload::record_free_failed(t_free_seq, outcome.free_result);
      t_free_seq = 0;
      return;
  }
}

}  // namespace

CUptiResult subscribe_api_callbacks(const CuptiLibrary& cupti) {
  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult result =
      cupti.subscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(&on_api_callback), nullptr);
  if (result != CUPTI_SUCCESS) return result;
  for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    for (CUpti_CallbackId cbid : memory_callback_ids(domain)) {
      if ((result = cupti.enable_callback(1, subscriber, domain, cbid)) != CUPTI_SUCCESS) {
        // All or nothing: half the functions would make a trace that looks complete.
        cupti.unsubscribe(subscriber);
        return result;
      }
    }
  }
  return CUPTI_SUCCESS;
}

void CUPTIAPI on_api_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void* cbdata) {
  const auto& data = *static_cast<const CUpti_CallbackData*>(cbdata);
  const bool entry = data.callbackSite == CUPTI_API_ENTER;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (!entry && t_runtime_depth > 0) --t_runtime_depth;  // > 0: enabled mid-call
    if (t_runtime_depth == 0) {
      ReentryGuard guard;
      if (guard.outermost() && preload::is_recording())
        apply(translate_callback(domain, cbid, data), data.correlationId);
    }
    if (entry) ++t_runtime_depth;
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && t_runtime_depth == 0) {
    ReentryGuard guard;
    if (guard.outermost() && preload::is_recording())
      apply(translate_callback(domain, cbid, data), data.correlationId);
  }
}

}  // namespace vramtrace::cupti
