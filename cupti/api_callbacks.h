// The CUPTI backend's callback subscriber: CUPTI calls on_api_callback on the application's
// thread, inside the API call, on entry and on exit. It turns each memory call into the shim's
// events (api_callback_translation.h) and records them through the shim's record path, stack
// included, on the calling thread.
#pragma once

#include <cupti.h>

#include "cupti_library.h"

namespace vramtrace::cupti {

// Subscribes on_api_callback and enables the memory functions' callbacks of the runtime and
// the driver, all or none. Returns CUPTI's result; CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
// when another tool (torch.profiler, Nsight) holds the subscription.
CUptiResult subscribe_api_callbacks(const CuptiLibrary& cupti);

// CUpti_CallbackFunc.
void CUPTIAPI on_api_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void* cbdata);

}  // namespace vramtrace::cupti
