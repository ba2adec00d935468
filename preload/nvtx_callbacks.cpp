#include "nvtx_callbacks.h"

#include <atomic>
#include <cstddef>
#include <type_traits>

#include "marker_recorder.h"
#include "marker_text.h"
#include "nanopb/vramtrace.pb.h"
#include "nvtx_registry.h"
#include "range_nesting.h"
#include "recorder.h"

namespace vramtrace::preload {
namespace {

using nvtx::DomainHandle;
using nvtx::EventAttributes;
using nvtx::RangeId;
using nvtx::StringHandle;

// Process-wide, so a range may end on another thread than the one that started it. 0 is
// never handed out: programs use it as "no range".
std::atomic<RangeId> g_next_range_id{1};

// What an event's attributes say: the message as UTF-8, the ARGB color, the category.
// `name` points into `text`, or to a registered string's text.
struct Described {
  MarkerText text;
  const char* name = "";
  uint32_t color = 0;
  uint32_t category = 0;

  Described() = default;
  Described(const Described&) = delete;  // `name` may point into this object
  Described& operator=(const Described&) = delete;

  void assign(const char* message) {
    text.assign(message);
    name = text.c_str();
  }
  void assign(const wchar_t* message) {
    text.assign(message);
    name = text.c_str();
  }
};

// Reads only the fields that lie inside the caller's `size`: an older NVTX's struct may be
// shorter than ours.
template <class Field>
bool inside(const EventAttributes* a, const Field& field) {
  const auto end = reinterpret_cast<const char*>(&field) + sizeof field;
  return end <= reinterpret_cast<const char*>(a) + a->size;
}

void describe(const EventAttributes* a, Described* out) {
  if (a == nullptr) return;
  if (inside(a, a->category)) out->category = a->category;
  if (inside(a, a->color) && a->colorType == nvtx::kColorArgb) out->color = a->color;
  if (!inside(a, a->message)) return;
  switch (a->messageType) {
    case nvtx::kMessageAscii:
      out->assign(a->message.ascii);
      break;
    case nvtx::kMessageUnicode:
      out->assign(a->message.unicode);
      break;
    case nvtx::kMessageRegistered:
      // Made valid UTF-8 and bounded once, when it was registered: used as it is.
      out->name = registered_nvtx_string(a->message.registered);
      break;
    default:
      break;
  }
}

const char* domain_name(const NvtxDomain* domain) {
  return domain == nullptr ? nullptr : domain->name.c_str();
}

void record(int type, const NvtxDomain* domain, const Described& d, RangeId id = 0) {
  MarkerEvent e{};
  e.type = type;
  e.source = vramtrace_wire_Marker_Source_SOURCE_NVTX;
  e.domain = domain_name(domain);
  e.name = d.name;
  e.range_id = id;
  e.color = d.color;
  e.category = d.category;
  record_marker(e);
}

// The message of the A and W calls.
void describe(const char* message, Described* out) {
  out->assign(message);
}
void describe(const wchar_t* message, Described* out) {
  out->assign(message);
}

// The bodies the calls share. `Text` is an attributes pointer, or the message of an A or W
// call; it is only read when the marker will be recorded.
template <class Text>
void mark(DomainHandle handle, Text text) {
  if (!is_recording()) return;
  const NvtxDomain* domain = find_nvtx_domain(handle);
  Described d;
  describe(text, &d);
  record(vramtrace_wire_Marker_Type_TYPE_MARK, domain, d);
}

template <class Text>
RangeId range_start(DomainHandle handle, Text text) {
  const RangeId id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (is_recording()) {
    const NvtxDomain* domain = find_nvtx_domain(handle);
    Described d;
    describe(text, &d);
    record(vramtrace_wire_Marker_Type_TYPE_RANGE_START, domain, d, id);
  }
  return id;
}

void range_end(DomainHandle handle, RangeId id) {
  if (is_recording())
    record(vramtrace_wire_Marker_Type_TYPE_RANGE_END, find_nvtx_domain(handle), Described{}, id);
}

template <class Text>
int range_push(DomainHandle handle, Text text) {
  const NvtxDomain* domain = find_nvtx_domain(handle);
  const int level = enter_range(nesting_scope(domain));
  if (level >= 0 && is_recording()) {
    Described d;
    describe(text, &d);
    record(vramtrace_wire_Marker_Type_TYPE_RANGE_PUSH, domain, d);
  }
  return level;
}

int range_pop(DomainHandle handle) {
  const NvtxDomain* domain = find_nvtx_domain(handle);
  const int level = leave_range(nesting_scope(domain));
  // A pop with no push open on this thread is the program's error: NVTX's answer is a
  // negative level, and the trace gets nothing it could not pair.
  if (level >= 0 && is_recording())
    record(vramtrace_wire_Marker_Type_TYPE_RANGE_POP, domain, Described{});
  return level;
}

}  // namespace

// The callbacks, named as NVTX names them (nvtx<name>), so the list in nvtx_abi.h can
// install them and check their types.
namespace nvtx_callbacks {
namespace {

void MarkEx(const EventAttributes* a) {
  mark(nullptr, a);
}
void MarkA(const char* message) {
  mark(nullptr, message);
}
void MarkW(const wchar_t* message) {
  mark(nullptr, message);
}
RangeId RangeStartEx(const EventAttributes* a) {
  return range_start(nullptr, a);
}
RangeId RangeStartA(const char* message) {
  return range_start(nullptr, message);
}
RangeId RangeStartW(const wchar_t* message) {
  return range_start(nullptr, message);
}
void RangeEnd(RangeId id) {
  range_end(nullptr, id);
}
int RangePushEx(const EventAttributes* a) {
  return range_push(nullptr, a);
}
int RangePushA(const char* message) {
  return range_push(nullptr, message);
}
int RangePushW(const wchar_t* message) {
  return range_push(nullptr, message);
}
int RangePop() {
  return range_pop(nullptr);
}
void DomainMarkEx(DomainHandle domain, const EventAttributes* a) {
  mark(domain, a);
}
RangeId DomainRangeStartEx(DomainHandle domain, const EventAttributes* a) {
  return range_start(domain, a);
}
void DomainRangeEnd(DomainHandle domain, RangeId id) {
  range_end(domain, id);
}
int DomainRangePushEx(DomainHandle domain, const EventAttributes* a) {
  return range_push(domain, a);
}
int DomainRangePop(DomainHandle domain) {
  return range_pop(domain);
}
StringHandle DomainRegisterStringA(DomainHandle domain, const char* text) {
  return register_nvtx_string(domain, MarkerText(text));
}
StringHandle DomainRegisterStringW(DomainHandle domain, const wchar_t* text) {
  MarkerText utf8;
  utf8.assign(text);
  return register_nvtx_string(domain, utf8);
}
DomainHandle DomainCreateA(const char* name) {
  return create_nvtx_domain(MarkerText(name));
}
DomainHandle DomainCreateW(const wchar_t* name) {
  MarkerText utf8;
  utf8.assign(name);
  return create_nvtx_domain(utf8);
}

}  // namespace
}  // namespace nvtx_callbacks

namespace {

struct ModuleTable {
  nvtx::FunctionTable slots = nullptr;
  unsigned int size = 0;
};

// Writes `fn` into the loader's slot for callback `id`, if this NVTX version has one.
void install(const ModuleTable& table, unsigned int id, nvtx::FunctionPointer fn) {
  if (table.slots != nullptr && id < table.size && table.slots[id] != nullptr)
    *table.slots[id] = fn;
}

}  // namespace

int attach_nvtx_callbacks(nvtx::GetExportTableFunc get_export_table) {
  if (get_export_table == nullptr || !is_recording()) return 0;
  const auto* callbacks =
      static_cast<const nvtx::ExportTableCallbacks*>(get_export_table(nvtx::kExportTableCallbacks));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(nvtx::ExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr)
    return 0;
  ModuleTable core, core2;
  if (callbacks->GetModuleFunctionTable(nvtx::kModuleCore, &core.slots, &core.size) == 0 ||
      core.slots == nullptr)
    return 0;
  // An NVTX older than domains has no CORE2 table: then only the core calls are recorded.
  if (callbacks->GetModuleFunctionTable(nvtx::kModuleCore2, &core2.slots, &core2.size) == 0)
    core2 = ModuleTable{};

#define VRAMTRACE_NVTX_INSTALL(module, id, name, ret, params)                     \
  static_assert(std::is_same_v<decltype(&nvtx_callbacks::name), nvtx::name##_fn>, \
                "the shim's nvtx" #name " does not have NVTX's type");            \
  install(nvtx::kModule##module == nvtx::kModuleCore ? core : core2, id,          \
          reinterpret_cast<nvtx::FunctionPointer>(&nvtx_callbacks::name));
  VRAMTRACE_NVTX_CALLBACKS(VRAMTRACE_NVTX_INSTALL)
#undef VRAMTRACE_NVTX_INSTALL
  return 1;
}

}  // namespace vramtrace::preload
