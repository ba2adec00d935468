// libcupti, loaded at run time. The injection library links nothing but libc (it runs inside
// someone else's process), so CUPTI's functions are found with dlopen/dlsym: a process
// whose CUDA has no CUPTI still loads us, and we say so instead of failing to load.
#pragma once

#include <cupti.h>

namespace vramtrace::cupti {

struct CuptiLibrary {
  decltype(&::cuptiGetVersion) get_version = nullptr;
  decltype(&::cuptiGetResultString) get_result_string = nullptr;
  decltype(&::cuptiSubscribe) subscribe = nullptr;
  decltype(&::cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&::cuptiEnableCallback) enable_callback = nullptr;
  decltype(&::cuptiActivityEnable) activity_enable = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) activity_register_callbacks = nullptr;
  decltype(&::cuptiActivityGetNextRecord) activity_get_next_record = nullptr;
  decltype(&::cuptiActivityGetNumDroppedRecords) activity_get_num_dropped_records = nullptr;
  decltype(&::cuptiActivityFlushAll) activity_flush_all = nullptr;

  // Loads libcupti (VRAMTRACE_CUPTI_LIBRARY if set, else by soname, else the toolkit's copy this
  // library was built against) and resolves every function above. On failure *why says what
  // was missing, and nothing may be called.
  bool load(const char** why);

  // CUPTI's name for `result`, or "unknown CUPTI error".
  const char* describe(CUptiResult result) const;
};

}  // namespace vramtrace::cupti
