// The CUPTI backend's API callbacks, as events: what one runtime or driver callback
// (CUpti_CallbackData, with the function's own parameter struct from CUDA's generated_*_meta.h)
// means for the trace, in the same AllocEvent/FreeEvent terms as the shim's hooks.
//
// A pure function of the callback's data: no CUPTI or CUDA call happens here, so the unit tests
// feed it callback data built with the real CUPTI headers, with no GPU and no driver.
//
// The timing follows the shim's (hook_support.h): an allocation is recorded on API exit, when
// its address and result are known; a free on API entry, before the memory can be handed out
// again, and a FreeFailed on exit when the free then failed. Each event keeps CUPTI's
// correlation id, which the activity records of the same call carry too.
#pragma once

#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include <cstdint>
#include <span>

#include "wire_encoder.h"

namespace vramtrace::cupti {

struct CallbackOutcome {
  enum class Action {
    kNone,         // not a memory function, or nothing to record at this site
    kRecordAlloc,  // `alloc`: an allocation call returned (successfully or not)
    kRecordFree,   // `free`: a free is about to run
    kFreeFailed,   // the free this thread recorded on entry returned `free_result` != 0
  };
  Action action = Action::kNone;
  preload::AllocEvent alloc{};
  preload::FreeEvent free{};
  int32_t free_result = 0;
};

// The callback ids of the runtime and driver memory functions the shim hooks in `domain`
// (CUPTI_CB_DOMAIN_RUNTIME_API or CUPTI_CB_DOMAIN_DRIVER_API): what the injection enables.
std::span<const CUpti_CallbackId> memory_callback_ids(CUpti_CallbackDomain domain);

// One callback, at its site (data.callbackSite). AllocEvent::device is preload::kAskDevice where
// only the calling context knows it: the caller asks after a success or an out-of-memory error.
CallbackOutcome translate_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const CUpti_CallbackData& data);

}  // namespace vramtrace::cupti
