// The summary of a trace: who ran, for how long, what each kind of memory did, the peaks, and
// what went wrong on the way (failed allocations, bad frees, import problems).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/allocator/allocator_level.h"
#include "analysis/reports/backend_comparison.h"
#include "analysis/roles/block_roles.h"
#include "analysis/scope/allocation_scope.h"
#include "analysis/scope/process_chains.h"
#include "analysis/scope/process_filter.h"
#include "analysis/time/device_peaks.h"
#include "analysis/values/advice.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct FailureCount {
  int result = 0;  // cudaError_t
  std::uint64_t count = 0;
};

// Totals for one allocation kind. Failed allocations count only in failed_allocations and
// failures, never in allocations or bytes.
struct KindTotals {
  int kind = 0;
  std::string name;
  std::uint64_t allocations = 0;  // successful allocations
  std::uint64_t bytes_allocated = 0;
  std::uint64_t frees = 0;
  std::uint64_t bytes_freed = 0;
  std::uint64_t failed_allocations = 0;
  std::vector<FailureCount> failures;  // by result code
  std::uint64_t live_count = 0;        // succeeded and never freed
  std::uint64_t live_bytes = 0;
};

// The driver's virtual memory API (cuMem*), its three layers apart: they are not three amounts
// of memory. A reservation is address space with no memory behind it, a handle is physical
// memory, and a mapping makes (part of) a handle's memory usable at an address. Each is the
// KindTotals of its kind, also listed among the summary's kinds.
struct VirtualMemoryTotals {
  KindTotals reserved;  // vmm_reservation: address space reserved
  KindTotals created;   // vmm_handle: physical memory created
  KindTotals mapped;    // vmm_mapping: memory mapped (what the device peaks count)
  // Any call of the three kinds, failed ones included.
  bool any() const;
};

struct BadFreeCount {
  std::string reason;  // 'unknown_address', 'call_failed'
  std::uint64_t count = 0;
};

struct Summary {
  bool trace_complete = true;
  std::vector<std::string> warnings;             // see trace_warnings()
  std::optional<std::string> vramtrace_version;  // of the collector that wrote the trace
  std::vector<std::string> command;              // the recorded command's argv
  // From the first process start or event to the last process end or event; 0 when empty.
  std::int64_t start_ns = 0;
  std::int64_t time_origin_ns = 0;  // the trace's (time_index.h): the peaks' "+D" count from it
  std::int64_t end_ns = 0;
  std::int64_t duration_ns = 0;
  std::vector<storage::ProcessRecord> processes;  // by upid
  // The same processes as people count them: one per pid's exec chain (process_chains.h).
  std::vector<ProcessChain> chains;
  // The selected processes whose "live" is counted where their Python interpreter began to
  // finalize (TraceReader::program_end_seq), not at the end of the trace.
  std::vector<std::int64_t> ended_at_python_finalizing;
  std::vector<KindTotals> kinds;  // kinds with at least one call, by kind id
  VirtualMemoryTotals virtual_memory;
  std::vector<DevicePeak> peaks;  // by upid, then device
  // The allocator level: per process, blocks (tensors) against the segments holding them and
  // the cache; a process without allocator events is seen at the segment level only.
  std::vector<AllocatorTotals> allocator;  // by upid, every selected process
  std::vector<DevicePeak> block_peaks;     // peak live block bytes, by upid, then device
  // One per block_peaks entry: the live blocks by role (block_roles.h) at that peak, for the
  // device whose peak is the process's largest (the roles are per process); unset for the
  // process's other devices.
  std::vector<std::optional<RoleTotals>> block_peak_roles;
  std::vector<BadFreeCount> bad_frees;      // by reason
  std::vector<storage::StatRecord> stats;   // by name, for the whole trace
  std::vector<Advice> advice;               // trace_advice.h: the rules that fired
  MemoryLevel level = MemoryLevel::kBlock;  // as asked (SummaryOptions)
  // `run --backend both`: what the shim and CUPTI each saw (whole trace). both is false for a
  // trace of one backend.
  BackendComparison backends;
};

struct SummaryOptions {
  // Only these processes: their rows, their allocations, peaks, bad frees and warnings, and
  // the time they span. Stats and the recorded command stay the whole trace's.
  ProcessSelection processes;
  // Only these allocations in the kinds, the peaks and the advice (advice names a device).
  AllocationScope allocations;
  // The segment level leaves blocks out: no block kind, block peaks, allocator totals or
  // advice (whose rules read blocks).
  MemoryLevel level = MemoryLevel::kBlock;
  // The roles at each blocks' peak (block_peak_roles): a pass over every block of the
  // processes with allocator events, left out where nothing shows them.
  bool roles = true;
};

Summary build_summary(const storage::TraceReader& trace, const SummaryOptions& options = {});

}  // namespace vramtrace::analysis
