// An NVTX instance as the NVTX 3 headers build one into each program or library: per module,
// a table of pointers to the slots that hold the implementation of each call, handed to the
// tool through the export table. The test plays NVTX's loader: it calls the shim's entry
// point, then calls through whatever the shim wrote into the slots.
#pragma once

#include <gtest/gtest.h>

#include "nvtx_abi.h"
#include "nvtx_injection.h"

namespace vramtrace::testing {

class FakeNvtx {
 public:
  // NVTX_CBID_CORE_SIZE and NVTX_CBID_CORE2_SIZE of NVTX 3. An older NVTX reports fewer ids.
  static constexpr unsigned kCoreIds = 16;
  static constexpr unsigned kCore2Ids = 16;

  // An older NVTX reports `core_ids` and `core2_ids` (0: no CORE2 module). The table stays
  // full-sized, so that a tool writing past the reported size is caught.
  explicit FakeNvtx(unsigned core_ids = kCoreIds, unsigned core2_ids = kCore2Ids)
      : core_ids_(core_ids), core2_ids_(core2_ids) {
    for (unsigned i = 0; i <= kCoreIds; ++i) {
      core_slots_[i] = &uninstalled;
      core_table_[i] = (i == 0 || i == kCoreIds) ? nullptr : &core_slots_[i];
    }
    for (unsigned i = 0; i <= kCore2Ids; ++i) {
      core2_slots_[i] = &uninstalled;
      core2_table_[i] = (i == 0 || i == kCore2Ids) ? nullptr : &core2_slots_[i];
    }
  }

  // What NVTX's loader does at the first NVTX call.
  int initialize() {
    current_ = this;
    return InitializeInjectionNvtx2(&get_export_table);
  }

  bool installed(nvtx::CallbackModule module, unsigned id) const {
    return slot(module, id) != &uninstalled;
  }

  // One member per call the shim implements, e.g. nvtx.RangePushA("step"): calls through
  // the slot, as NVTX's nvtxRangePushA does.
#define VRAMTRACE_FAKE_NVTX_CALL(module, id, name, ret, params)                         \
  template <class... Args>                                                              \
  auto name(Args... args) {                                                             \
    EXPECT_TRUE(installed(nvtx::kModule##module, id)) << #name " was not installed";    \
    return reinterpret_cast<nvtx::name##_fn>(slot(nvtx::kModule##module, id))(args...); \
  }
  VRAMTRACE_NVTX_CALLBACKS(VRAMTRACE_FAKE_NVTX_CALL)
#undef VRAMTRACE_FAKE_NVTX_CALL

 private:
  static void uninstalled() {}

  nvtx::FunctionPointer slot(nvtx::CallbackModule module, unsigned id) const {
    return module == nvtx::kModuleCore ? core_slots_[id] : core2_slots_[id];
  }

  static int get_module_function_table(nvtx::CallbackModule module, nvtx::FunctionTable* table,
                                       unsigned int* size) {
    FakeNvtx* self = current_;
    switch (module) {
      case nvtx::kModuleCore:
        *table = self->core_table_;
        *size = self->core_ids_;
        return 1;
      case nvtx::kModuleCore2:
        if (self->core2_ids_ == 0) return 0;  // an NVTX older than domains
        *table = self->core2_table_;
        *size = self->core2_ids_;
        return 1;
      default:
        return 0;
    }
  }

  static const void* get_export_table(uint32_t id) {
    return id == nvtx::kExportTableCallbacks ? &callbacks_ : nullptr;
  }

  static inline FakeNvtx* current_ = nullptr;
  static inline const nvtx::ExportTableCallbacks callbacks_{sizeof(nvtx::ExportTableCallbacks),
                                                            &get_module_function_table};

  unsigned core_ids_, core2_ids_;
  nvtx::FunctionPointer core_slots_[kCoreIds + 1];
  nvtx::FunctionPointer* core_table_[kCoreIds + 1];
  nvtx::FunctionPointer core2_slots_[kCore2Ids + 1];
  nvtx::FunctionPointer* core2_table_[kCore2Ids + 1];
};

}  // namespace vramtrace::testing
