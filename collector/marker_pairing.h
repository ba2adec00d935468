// MarkerPairing: which marker range an end or a pop closes, in one process.
//
// NVTX has two kinds of range. Push/pop ranges nest per thread *and per domain* (NVTX keeps
// a stack for each): a pop closes the innermost range pushed on its thread in its domain,
// and a push's depth and parent come from the ranges open there. The shim's C API nests on
// its own stack too, so the source is part of the key. Start/end ranges are paired by the id
// nvtxRangeStart returned, unique in the process, and may end on another thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace vramtrace::collector {

class MarkerPairing {
 public:
  struct Nesting {
    int depth;                      // 0: outermost on its thread
    std::optional<int64_t> parent;  // the enclosing push/pop range's marker id
  };

  // Where push/pop ranges nest.
  struct Stack {
    uint32_t tid;
    int source;  // wire::Marker::Source
    std::string domain;
    friend bool operator==(const Stack&, const Stack&) = default;
  };

  // A push/pop range `marker_id` opens on `stack`.
  Nesting push(const Stack& stack, int64_t marker_id);
  // The range a pop on `stack` closes; nullopt when none is open there.
  std::optional<int64_t> pop(const Stack& stack);

  void start(uint64_t range_id, int64_t marker_id);
  // The range `range_id` names; nullopt when it was never started (or already ended).
  std::optional<int64_t> end(uint64_t range_id);

  void clear();

 private:
  struct StackHash {
    size_t operator()(const Stack& s) const;
  };
  std::unordered_map<Stack, std::vector<int64_t>, StackHash> open_;
  std::unordered_map<uint64_t, int64_t> started_;
};

}  // namespace vramtrace::collector
