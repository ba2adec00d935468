// Symbolizer: turns (module, relative pc) pairs from the shim's native stacks into function
// names, source locations and inlined frames, using the DWARF of the ELF files on disk.
//
// Input contract: the shim sends its module map (path, build-id, load bias) and raw return
// addresses; the collector maps each address to its module and passes
// rel_pc = address - load_bias (minus 1 for return addresses, so the byte lies inside the
// call). Nothing here trusts that the file on disk is the one the process had loaded: a
// reported build-id that differs from the file's is a mismatch and the file is not used.
//
// Not thread-safe: one collector thread owns a Symbolizer. References returned by symbolize()
// stay valid for the Symbolizer's lifetime.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vramtrace::collector {

struct SymbolizedFrame {
  std::string function;  // demangled ("vramtrace::foo(int)"); empty if unknown
  // Absolute when DWARF allows (relative paths joined with an absolute comp_dir); otherwise as
  // in DWARF, e.g. "./stdlib/msort.c" from distribution builds; empty if unknown.
  std::string file;
  int line = 0;          // 0 if unknown
  bool inlined = false;  // true: this frame was inlined into the next frame of the vector

  friend bool operator==(const SymbolizedFrame&, const SymbolizedFrame&) = default;
};

class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Frames for one instruction address, innermost first: for an address inside code inlined
  // from g() into f(), {g (inlined=true), f (inlined=false)}. Never empty: an address that
  // cannot be resolved gives one frame with an empty function. Results are cached per
  // (module, rel_pc). `rel_pc` is the ELF virtual address of an instruction byte (the caller
  // already subtracted 1 from return addresses so that they point into the call).
  // `build_id` is the raw build-id bytes the process reported for the module; empty means
  // "unknown" and skips the check.
  const std::vector<SymbolizedFrame>& symbolize(const std::string& module_path,
                                                std::string_view build_id, uint64_t rel_pc);

  // Counters for the trace's stats table. Each module (path + build-id) counts at most once
  // in modules_missing (absent, unreadable or not an ELF file) or build_id_mismatch;
  // `unresolved` counts distinct (module, rel_pc) pairs that got no function name, whatever
  // the reason (including those in missing or mismatched modules).
  struct Stats {
    int64_t modules_missing = 0, build_id_mismatch = 0, unresolved = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  class Module;

  Module& module_for(const std::string& module_path, std::string_view build_id);

  // Path -> the modules seen at that path, one per distinct build-id (almost always one; more
  // when processes in one trace ran different builds of the same file).
  std::unordered_map<std::string, std::vector<std::unique_ptr<Module>>> modules_;
  Stats stats_;
};

}  // namespace vramtrace::collector
