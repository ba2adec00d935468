#include "range_nesting.h"

#include <cstdint>

namespace vramtrace::preload {
namespace {

struct DomainNesting {
  uint16_t scope;
  uint16_t depth;  // 0: the slot is free
};

struct ThreadNesting {
  uint32_t api;
  uint32_t nvtx_default;
  DomainNesting domains[kMaxDomainsOpenPerThread];
};

// 64 bytes a thread, initial-exec like the shim's other thread-locals. Not a depth per
// domain (256 of them): a library with initial-exec TLS that is dlopened rather than
// preloaded (NVTX_INJECTION64_PATH alone) needs its whole TLS block from the loader's small
// static-TLS surplus, and dlopen fails when it does not fit.
constinit thread_local ThreadNesting t_nesting __attribute__((tls_model("initial-exec"))) = {};
static_assert(sizeof(ThreadNesting) == 64);

constexpr uint32_t kMaxFixedDepth = 0x7fffffff;  // a level must stay a non-negative int
constexpr uint32_t kMaxDomainDepth = 0xffff;

int enter(uint32_t& depth, uint32_t max) {
  if (depth >= max) return -1;
  return static_cast<int>(depth++);
}

int leave(uint32_t& depth) {
  if (depth == 0) return -1;
  return static_cast<int>(--depth);
}

// The slot that holds `scope`'s open ranges on this thread, or null.
DomainNesting* open_slot(unsigned scope) {
  for (DomainNesting& slot : t_nesting.domains)
    if (slot.depth != 0 && slot.scope == scope) return &slot;
  return nullptr;
}

}  // namespace

int enter_range(unsigned scope) {
  if (scope == kApiScope) return enter(t_nesting.api, kMaxFixedDepth);
  if (scope == kNvtxDefaultScope) return enter(t_nesting.nvtx_default, kMaxFixedDepth);
  if (scope >= kNestingScopes) return -1;
  DomainNesting* slot = open_slot(scope);
  if (slot == nullptr) {
    for (DomainNesting& free : t_nesting.domains) {
      if (free.depth == 0) {
        free.scope = static_cast<uint16_t>(scope);
        slot = &free;
        break;
      }
    }
    if (slot == nullptr) return -1;
  }
  if (slot->depth >= kMaxDomainDepth) return -1;
  return slot->depth++;
}

int leave_range(unsigned scope) {
  if (scope == kApiScope) return leave(t_nesting.api);
  if (scope == kNvtxDefaultScope) return leave(t_nesting.nvtx_default);
  DomainNesting* slot = open_slot(scope);
  if (slot == nullptr) return -1;
  return --slot->depth;
}

}  // namespace vramtrace::preload
