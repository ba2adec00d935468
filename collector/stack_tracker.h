// StackTracker: an event's stack, from the addresses and Python frames the shim sent to a
// callsite (callsite_tree.h).
//
// Most events repeat a stack, so each process keeps the raw stacks it has interned: a repeat
// costs one hash of its addresses. The shim may also send a stack once under a name and then
// only the name (preload/stack_names.h). Python frames take the place of the interpreter's
// native frames (python_splice.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "collector/callsite_tree.h"
#include "collector/ingest_stats.h"
#include "collector/module_tracker.h"
#include "storage/trace_rows.h"

namespace vramtrace::storage {
class TraceWriter;
}

namespace vramtrace::collector {

class StackTracker {
 public:
  // A stack deeper than the wire allows cannot come from our shim.
  static constexpr int kMaxStackDepth = 256;

  // A stack name's meaning in one process, in 8 bytes (a process with many threads has 4096
  // names per thread's table): a callsite id (>= 0), kNoCallsite for a stack that interned to
  // none, or kUnnamed until the shim defines it.
  class NamedStack {
   public:
    bool named() const { return value_ != kUnnamed; }
    std::optional<int64_t> callsite() const {
      return value_ >= 0 ? std::optional<int64_t>(value_) : std::nullopt;
    }
    void define(std::optional<int64_t> callsite) { value_ = callsite.value_or(kNoCallsite); }

   private:
    static constexpr int64_t kUnnamed = -2, kNoCallsite = -1;
    int64_t value_ = kUnnamed;
  };

  struct StackHash {
    using is_transparent = void;
    size_t operator()(std::span<const uint64_t> ips) const;
  };
  struct StackEqual {
    using is_transparent = void;
    bool operator()(std::span<const uint64_t> a, std::span<const uint64_t> b) const {
      return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }
  };

  // One process's stacks, dropped with its ring.
  struct ProcessStacks {
    // Raw stacks already interned. Addresses are per process, so the cache is too.
    std::unordered_map<std::vector<uint64_t>, std::optional<int64_t>, StackHash, StackEqual> cache;
    // What each name the shim gave stands for, by name. Names are dense from 1 (a table of
    // the shim's per thread); a name past the vector's bound, which only a broken ring sends,
    // goes to the map.
    std::vector<NamedStack> names;
    std::unordered_map<uint32_t, NamedStack> far_names;
  };

  // Writes each new callsite; frames come from `modules`.
  StackTracker(storage::TraceWriter& writer, ModuleTracker& modules, IngestStats& stats);

  // False, counted as stack_too_deep, when the event's stack is deeper than the wire allows.
  template <class Message>
  bool fits(const Message& m) {
    if (m.stack_size() <= kMaxStackDepth) return true;
    stats_.add(Stat::kStackTooDeep);
    return false;
  }

  // An Alloc's, Free's or FreeFailed's callsite: its stack as sent, or as named before; its
  // Python status counted. The stack must fit().
  template <class Message>
  std::optional<int64_t> callsite(ProcessStacks& p, const ModuleTracker::ProcessModules& modules,
                                  const Message& m);

  // A stack's callsite: its native frames (innermost first), with the Python frames (wire ids
  // of code objects, and lines, innermost first) in place of the interpreter's.
  std::optional<int64_t> intern(ProcessStacks& p, const ModuleTracker::ProcessModules& modules,
                                std::span<const uint64_t> ips,
                                std::span<const uint64_t> python_code,
                                std::span<const uint32_t> python_line);

  // The process mapped a new module: stacks cached before may have resolved into [unknown].
  static void forget_cached(ProcessStacks& p) { p.cache.clear(); }

  // A callsite's frames as a report shows them, innermost first, from what is in memory.
  std::vector<storage::StackFrame> stack_of(std::optional<int64_t> callsite) const;

 private:
  // The slot of a stack name, or null for a name that is 0 or past any sane bound.
  static NamedStack* name_slot(ProcessStacks& p, uint32_t name);
  void count_python_stack(wire::PythonStackStatus status);

  ModuleTracker& modules_;
  IngestStats& stats_;
  CallsiteTree callsites_;
  std::vector<uint64_t> key_;  // intern()'s key for mixed stacks, reused: no allocation per event
};

}  // namespace vramtrace::collector
