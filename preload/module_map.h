// Tells the collector which ELF objects are loaded where, so that it can symbolize return
// addresses in its own process.
//
// The shim does not hook dlopen: glibc's dlopen resolves $ORIGIN and RUNPATH from its caller,
// and a hook would make the shim that caller. Instead, before each event, the shim compares
// the loader's load and unload counters (dlpi_adds/dlpi_subs) with those of its last scan and
// rescans when they moved. A stack can only point into objects loaded before it was captured,
// so the modules always reach the ring before the first event that needs them.
#pragma once

#include <cstdint>

namespace vramtrace::preload {

struct ModuleInfo {
  uint64_t start, end, load_bias;
  const char* path;
  const unsigned char* build_id;
  uint32_t build_id_bytes;
};

// How many objects the loader has unloaded so far (dlpi_subs). Cheap, as changed() is.
uint64_t loader_unload_count();

class ModuleMap {
 public:
  // True when objects were loaded or unloaded since the last scan. Cheap: one call into the
  // loader that stops at its first object.
  bool changed() const;

  // Calls emit(const ModuleInfo&) for each loaded object not sent before, and remembers the
  // loader's counters. The caller serialises calls. Returns false if emit failed.
  template <class Emit>
  bool scan(Emit&& emit) {
    return scan_impl([](const ModuleInfo& m, void* ctx) { return (*static_cast<Emit*>(ctx))(m); },
                     &emit);
  }

  // Forget what was sent: after fork, the child's collector has seen nothing.
  void reset();

 private:
  bool scan_impl(bool (*emit)(const ModuleInfo&, void*), void* ctx);
  bool already_sent(uint64_t key) const;
  void remember(uint64_t key);

  static constexpr int kMaxRemembered = 8192;
  uint64_t sent_[kMaxRemembered] = {};
  int sent_count_ = 0;
  uint64_t adds_ = 0, subs_ = 0;
};

}  // namespace vramtrace::preload
