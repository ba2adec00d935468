// The part of NVTX 3's tool interface that the shim implements, declared by the shim itself.
//
// NVTX 3 is header-only: each program or library that uses it carries its own copy of the
// loader, which, at the first NVTX call, dlopens $NVTX_INJECTION64_PATH, calls the library's
// InitializeInjectionNvtx2(getExportTable), and from then on calls whatever the tool wrote
// into its function table. The shim must not need the CUDA toolkit to build, so it declares
// this interface here; tests/nvtx/nvtx_abi_check.cpp compares every declaration with the real
// headers (nvtx3/nvToolsExt.h, nvtxDetail/nvtxTypes.h) where the toolkit is installed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vramtrace::nvtx {

using RangeId = uint64_t;

// Opaque to programs: the tool decides what a handle points to (nvtx_registry.h).
struct DomainRegistration;
using DomainHandle = DomainRegistration*;
struct StringRegistration;
using StringHandle = StringRegistration*;

inline constexpr int32_t kColorUnknown = 0;
inline constexpr int32_t kColorArgb = 1;

inline constexpr int32_t kMessageUnknown = 0;
inline constexpr int32_t kMessageAscii = 1;
inline constexpr int32_t kMessageUnicode = 2;
inline constexpr int32_t kMessageRegistered = 3;

union MessageValue {
  const char* ascii;
  const wchar_t* unicode;
  StringHandle registered;
};

// nvtxEventAttributes_v2. `size` says how much of it the caller filled in: fields past it
// must not be read (an older caller's struct may end earlier).
struct EventAttributes {
  uint16_t version;
  uint16_t size;
  uint32_t category;
  int32_t colorType;
  uint32_t color;
  int32_t payloadType;
  int32_t reserved0;
  union {
    uint64_t ullValue;
    int64_t llValue;
    double dValue;
    uint32_t uiValue;
    int32_t iValue;
    float fValue;
  } payload;
  int32_t messageType;
  MessageValue message;
};

// Returned by push and pop when no tool tracks the nesting.
inline constexpr int kNoPushPopTracking = -2;

// NvtxCallbackModule: a C enum whose constants are all non-negative (the last 0x7fffffff),
// which GCC and Clang store as unsigned int.
enum CallbackModule : unsigned int {
  kModuleInvalid = 0,
  kModuleCore = 1,
  kModuleCore2 = 5,
};

// NvtxExportTableID: only the callbacks table is used.
inline constexpr uint32_t kExportTableCallbacks = 1;

using FunctionPointer = void (*)(void);
// An array, indexed by callback id, of pointers to the loader's function pointer slots.
using FunctionTable = FunctionPointer**;

struct ExportTableCallbacks {
  size_t struct_size;
  // `*out_size` is the number of valid ids plus one: ids 1 .. *out_size - 1 may be written.
  int (*GetModuleFunctionTable)(CallbackModule module, FunctionTable* out_table,
                                unsigned int* out_size);
};

using GetExportTableFunc = const void* (*)(uint32_t export_table_id);
using InitializeInjectionFunc = int (*)(GetExportTableFunc get_export_table);

// The callbacks the shim implements: X(module, callback id, name, return type, parameters).
// The ids are NVTX's NVTX_CBID_CORE_<name> and NVTX_CBID_CORE2_<name>; the function types
// are NVTX's nvtx<name>_impl_fntype. Not implemented, so NVTX makes them no-ops: the
// category and OS-thread naming calls, resources, nvtxDomainDestroy (a handle stays valid
// for good: see nvtx_registry.h) and nvtxInitialize (there is nothing to start).
#define VRAMTRACE_NVTX_CALLBACKS(X)                                                               \
  X(Core, 1, MarkEx, void, (const EventAttributes* attributes))                                   \
  X(Core, 2, MarkA, void, (const char* message))                                                  \
  X(Core, 3, MarkW, void, (const wchar_t* message))                                               \
  X(Core, 4, RangeStartEx, RangeId, (const EventAttributes* attributes))                          \
  X(Core, 5, RangeStartA, RangeId, (const char* message))                                         \
  X(Core, 6, RangeStartW, RangeId, (const wchar_t* message))                                      \
  X(Core, 7, RangeEnd, void, (RangeId id))                                                        \
  X(Core, 8, RangePushEx, int, (const EventAttributes* attributes))                               \
  X(Core, 9, RangePushA, int, (const char* message))                                              \
  X(Core, 10, RangePushW, int, (const wchar_t* message))                                          \
  X(Core, 11, RangePop, int, (void))                                                              \
  X(Core2, 1, DomainMarkEx, void, (DomainHandle domain, const EventAttributes* attributes))       \
  X(Core2, 2, DomainRangeStartEx, RangeId,                                                        \
    (DomainHandle domain, const EventAttributes* attributes))                                     \
  X(Core2, 3, DomainRangeEnd, void, (DomainHandle domain, RangeId id))                            \
  X(Core2, 4, DomainRangePushEx, int, (DomainHandle domain, const EventAttributes* attributes))   \
  X(Core2, 5, DomainRangePop, int, (DomainHandle domain))                                         \
  X(Core2, 10, DomainRegisterStringA, StringHandle, (DomainHandle domain, const char* string))    \
  X(Core2, 11, DomainRegisterStringW, StringHandle, (DomainHandle domain, const wchar_t* string)) \
  X(Core2, 12, DomainCreateA, DomainHandle, (const char* name))                                   \
  X(Core2, 13, DomainCreateW, DomainHandle, (const wchar_t* name))

// nvtx::MarkEx_fn and so on: the type of each callback.
#define VRAMTRACE_NVTX_FN_TYPE(module, id, name, ret, params) using name##_fn = ret(*) params;
VRAMTRACE_NVTX_CALLBACKS(VRAMTRACE_NVTX_FN_TYPE)
#undef VRAMTRACE_NVTX_FN_TYPE

}  // namespace vramtrace::nvtx
