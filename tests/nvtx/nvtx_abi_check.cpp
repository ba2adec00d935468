// Compile-time proof that the shim's own NVTX declarations (preload/nvtx_abi.h) match the
// NVTX 3 headers of the CUDA toolkit: the event attributes' layout, the constants the shim
// interprets, the export table, and each callback's id and function type. Built only where
// the toolkit exists; if this file compiles, the shim speaks NVTX's ABI.
#include <nvtx3/nvToolsExt.h>

#include <cstddef>
#include <type_traits>

#include "nvtx_abi.h"

namespace vt = vramtrace::nvtx;

// Our parameter and return types, translated to the real ones.
template <class T>
struct ToReal {
  using type = T;
};
template <>
struct ToReal<const vt::EventAttributes*> {
  using type = const nvtxEventAttributes_t*;
};
template <>
struct ToReal<vt::DomainHandle> {
  using type = nvtxDomainHandle_t;
};
template <>
struct ToReal<vt::StringHandle> {
  using type = nvtxStringHandle_t;
};
template <>
struct ToReal<vt::CallbackModule> {
  using type = NvtxCallbackModule;
};
template <>
struct ToReal<vt::GetExportTableFunc> {
  using type = NvtxGetExportTableFunc_t;
};

template <class Fn>
struct ToRealFunction;
template <class Ret, class... Args>
struct ToRealFunction<Ret (*)(Args...)> {
  using type = typename ToReal<Ret>::type (*)(typename ToReal<Args>::type...);
};
template <class Fn>
using real_function_t = typename ToRealFunction<Fn>::type;

// Each callback: its id in its module, and its type.
#define VRAMTRACE_MODULE_Core NVTX_CB_MODULE_CORE
#define VRAMTRACE_MODULE_Core2 NVTX_CB_MODULE_CORE2
#define VRAMTRACE_CBID_Core(name) NVTX_CBID_CORE_##name
#define VRAMTRACE_CBID_Core2(name) NVTX_CBID_CORE2_##name
#define VRAMTRACE_CHECK_CALLBACK(module, id, name, ret, params)                                   \
  static_assert(id == VRAMTRACE_CBID_##module(name),                                              \
                "preload/nvtx_abi.h gives " #name " another id than NVTX");                       \
  static_assert(std::is_same_v<real_function_t<vt::name##_fn>, nvtx##name##_impl_fntype>,         \
                "preload/nvtx_abi.h declares " #name " unlike NVTX's nvtx" #name "_impl_fntype"); \
  static_assert(static_cast<int>(vt::kModule##module) == VRAMTRACE_MODULE_##module,               \
                "preload/nvtx_abi.h puts " #name " in another module than NVTX");
VRAMTRACE_NVTX_CALLBACKS(VRAMTRACE_CHECK_CALLBACK)

// The ids the shim leaves to NVTX's no-ops, so the list above is complete on purpose.
static_assert(NVTX_CBID_CORE_SIZE == 16 && NVTX_CBID_CORE2_SIZE == 16,
              "NVTX has new core calls: decide whether the shim implements them "
              "(and update tests/nvtx/fake_nvtx.h)");

// Scalars and handles.
static_assert(std::is_same_v<vt::RangeId, nvtxRangeId_t>);
static_assert(sizeof(vt::DomainHandle) == sizeof(nvtxDomainHandle_t));
static_assert(sizeof(vt::StringHandle) == sizeof(nvtxStringHandle_t));
static_assert(vt::kNoPushPopTracking == NVTX_NO_PUSH_POP_TRACKING);
static_assert(vt::kColorUnknown == NVTX_COLOR_UNKNOWN && vt::kColorArgb == NVTX_COLOR_ARGB);
static_assert(vt::kMessageUnknown == NVTX_MESSAGE_UNKNOWN);
static_assert(vt::kMessageAscii == NVTX_MESSAGE_TYPE_ASCII);
static_assert(vt::kMessageUnicode == NVTX_MESSAGE_TYPE_UNICODE);
static_assert(vt::kMessageRegistered == NVTX_MESSAGE_TYPE_REGISTERED);

// nvtxEventAttributes_t, field by field.
using Real = nvtxEventAttributes_t;
using Ours = vt::EventAttributes;
static_assert(sizeof(Ours) == sizeof(Real) && alignof(Ours) == alignof(Real));
static_assert(sizeof(Ours) == NVTX_EVENT_ATTRIB_STRUCT_SIZE);
#define VRAMTRACE_CHECK_FIELD(field)                              \
  static_assert(offsetof(Ours, field) == offsetof(Real, field),   \
                "nvtxEventAttributes_t." #field " is elsewhere"); \
  static_assert(sizeof(Ours::field) == sizeof(Real::field),       \
                "nvtxEventAttributes_t." #field " has another size");
VRAMTRACE_CHECK_FIELD(version)
VRAMTRACE_CHECK_FIELD(size)
VRAMTRACE_CHECK_FIELD(category)
VRAMTRACE_CHECK_FIELD(colorType)
VRAMTRACE_CHECK_FIELD(color)
VRAMTRACE_CHECK_FIELD(payloadType)
VRAMTRACE_CHECK_FIELD(reserved0)
VRAMTRACE_CHECK_FIELD(payload)
VRAMTRACE_CHECK_FIELD(messageType)
VRAMTRACE_CHECK_FIELD(message)
static_assert(std::is_same_v<decltype(Ours::category), decltype(Real::category)>);
static_assert(std::is_same_v<decltype(Ours::colorType), decltype(Real::colorType)>);
static_assert(std::is_same_v<decltype(Ours::color), decltype(Real::color)>);
static_assert(std::is_same_v<decltype(Ours::messageType), decltype(Real::messageType)>);
static_assert(sizeof(vt::MessageValue) == sizeof(nvtxMessageValue_t));
static_assert(
    std::is_same_v<decltype(vt::MessageValue::ascii), decltype(nvtxMessageValue_t::ascii)>);
static_assert(
    std::is_same_v<decltype(vt::MessageValue::unicode), decltype(nvtxMessageValue_t::unicode)>);
static_assert(sizeof(vt::MessageValue::registered) == sizeof(nvtxMessageValue_t::registered));

// The export table and the module tables.
static_assert(vt::kExportTableCallbacks == NVTX_ETID_CALLBACKS);
static_assert(static_cast<int>(vt::kModuleInvalid) == NVTX_CB_MODULE_INVALID);
static_assert(sizeof(vt::CallbackModule) == sizeof(NvtxCallbackModule));
static_assert(std::is_same_v<std::underlying_type_t<vt::CallbackModule>,
                             std::underlying_type_t<NvtxCallbackModule>>);
static_assert(std::is_same_v<vt::FunctionPointer, NvtxFunctionPointer>);
static_assert(std::is_same_v<vt::FunctionTable, NvtxFunctionTable>);
static_assert(sizeof(vt::ExportTableCallbacks) == sizeof(NvtxExportTableCallbacks));
static_assert(offsetof(vt::ExportTableCallbacks, struct_size) ==
              offsetof(NvtxExportTableCallbacks, struct_size));
static_assert(offsetof(vt::ExportTableCallbacks, GetModuleFunctionTable) ==
              offsetof(NvtxExportTableCallbacks, GetModuleFunctionTable));
static_assert(
    std::is_same_v<real_function_t<decltype(vt::ExportTableCallbacks::GetModuleFunctionTable)>,
                   decltype(NvtxExportTableCallbacks::GetModuleFunctionTable)>);
static_assert(std::is_same_v<vt::GetExportTableFunc, NvtxGetExportTableFunc_t>);
static_assert(std::is_same_v<real_function_t<vt::InitializeInjectionFunc>,
                             NvtxInitializeInjectionNvtxFunc_t>);

int main() {
  return 0;
}
