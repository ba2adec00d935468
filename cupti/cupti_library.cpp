#include "cupti_library.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <initializer_list>

namespace vramtrace::cupti {
namespace {

// RTLD_LOCAL: CUPTI's symbols stay out of the process's global scope, as if we had never come.
void* open_cupti() {
  const char* chosen = getenv("VRAMTRACE_CUPTI_LIBRARY");
  if (chosen != nullptr && *chosen != '\0') return dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
  for (const char* name : {"libcupti.so", "libcupti.so.13", "libcupti.so.12"})
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
#ifdef VRAMTRACE_CUPTI_BUILD_PATH
  return dlopen(VRAMTRACE_CUPTI_BUILD_PATH, RTLD_NOW | RTLD_LOCAL);
#else
  return nullptr;
#endif
}

template <class Fn>
bool resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return *fn != nullptr;
}

}  // namespace

bool CuptiLibrary::load(const char** why) {
  void* handle = open_cupti();
  if (handle == nullptr) {
    *why = "libcupti was not found (set VRAMTRACE_CUPTI_LIBRARY to its path)";
    return false;
  }
  const bool all =
      resolve(handle, "cuptiGetVersion", &get_version) &&
      resolve(handle, "cuptiGetResultString", &get_result_string) &&
      resolve(handle, "cuptiSubscribe", &subscribe) &&
      resolve(handle, "cuptiUnsubscribe", &unsubscribe) &&
      resolve(handle, "cuptiEnableCallback", &enable_callback) &&
      resolve(handle, "cuptiActivityEnable", &activity_enable) &&
      resolve(handle, "cuptiActivityRegisterCallbacks", &activity_register_callbacks) &&
      resolve(handle, "cuptiActivityGetNextRecord", &activity_get_next_record) &&
      resolve(handle, "cuptiActivityGetNumDroppedRecords", &activity_get_num_dropped_records) &&
      resolve(handle, "cuptiActivityFlushAll", &activity_flush_all);
  if (!all) {
    *why = "libcupti lacks a function vramtrace needs (a CUPTI older than CUDA 11.2?)";
    return false;
  }
  return true;
}

const char* CuptiLibrary::describe(CUptiResult result) const {
  const char* text = nullptr;
  if (get_result_string == nullptr || get_result_string(result, &text) != CUPTI_SUCCESS ||
      text == nullptr)
    return "unknown CUPTI error";
  return text;
}

}  // namespace vramtrace::cupti
