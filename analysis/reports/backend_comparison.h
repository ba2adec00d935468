// `vramtrace run --backend both`: the LD_PRELOAD shim and the CUPTI library recorded the same
// processes, each into its own process rows (process.backend). This compares what they saw:
// per kind, how many successful allocations and bytes each recorded, and which allocations one
// recorded and the other did not.
//
// Two backends' events cannot share a correlation id (the shim has none), so an allocation of
// one is matched to the other's by process id, kind, address and size, in the order each made
// them: the n-th allocation of that key by one backend is the n-th by the other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct BackendKindTotals {
  int kind = 0;
  std::string name;
  std::uint64_t preload_allocations = 0, preload_bytes = 0;
  std::uint64_t cupti_allocations = 0, cupti_bytes = 0;
};

// A successful allocation only one backend recorded.
struct UnmatchedAllocation {
  std::string seen_by;  // storage::kBackendPreload or kBackendCupti
  std::uint32_t pid = 0;
  std::int64_t allocation_id = 0;
  std::string kind, api;
  std::uint64_t address = 0, size = 0;
};

struct BackendComparison {
  bool both = false;                     // the trace has process rows of both backends
  std::vector<BackendKindTotals> kinds;  // by kind id
  std::uint64_t only_preload = 0, only_cupti = 0;
  std::vector<UnmatchedAllocation> unmatched;  // the first `limit`, in (pid, alloc_seq) order
};

BackendComparison compare_backends(const storage::TraceReader& trace, std::size_t limit = 20);

}  // namespace vramtrace::analysis
