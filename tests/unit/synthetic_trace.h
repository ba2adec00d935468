// A small trace with known content, written through the real TraceWriter, for the analysis and
// CLI tests. Every number the tests expect is derived from the table below.
//
// Process upid 1 (pid 4242, exited 0, complete), device 0 unless noted:
//   seq  allocation                                            callsite  fate
//    1   a1 device   1 MiB @0x7f0000000000                        3      freed at seq 3
//    2   a2 device   4 MiB @0x7f0000100000                        3      leaked
//    4   a3 device   2 MiB @0x7f0000000000 (a1's address again)   3      leaked
//    5   a4 host_pinned 8 MiB                                     4      leaked
//    6   a5 device  64 GiB, failed with 2 (out of memory)         3      never a leak
//    7   a6 async    3 MiB on device 1                            5      leaked
//    8   a7 device  16 MiB                                        4      freed at seq 9
//   10   a8 device 512 KiB, no stack                              -      free at seq 11 failed:
//                                                                        cleared, leaked
//   11   bad free (call_failed) of a8;  12 bad free (unknown_address) of 0xdead
// Process upid 2 (pid 4300, killed by SIGKILL, not complete), device 0:
//    1   b1 device 2 MiB at callsite 2, freed at seq 2;
//    3..5  b2..b4 device 1 MiB each at callsite 6, leaked
//
// Stacks (innermost first):
//   callsite 2: make_buffers (leaky.cu:12), main (leaky.cu:40)
//   callsite 3: inline_helper (helpers.h:7, inlined), make_buffers, main
//   callsite 4: make_pinned (leaky.cu:20), main
//   callsite 5: ?? (libtorch.so+0x5000, no symbol), make_pinned, main
//   callsite 6: child_work (leaky.cu:50), make_buffers, main
// Callsite 6 leaks as many bytes as callsite 5 but in more allocations, and has the higher id:
// only the count can put it first.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "storage/trace_rows.h"

namespace vramtrace::testing {

inline constexpr std::uint64_t kKiB = 1024;
inline constexpr std::uint64_t kMiB = 1024 * kKiB;
inline constexpr std::uint64_t kGiB = 1024 * kMiB;

inline constexpr std::int64_t kFirstStartNs = 1'000'000'000;
inline constexpr std::int64_t kLastEndNs = 5'000'000'000;
inline constexpr const char* kLeakyExe = "/usr/bin/leaky";
inline constexpr const char* kTorchModule = "/usr/lib/libtorch.so";

// Writes the trace above to `path`. With finish = false the writer is dropped without
// finish(), as when a collector dies: meta complete stays '0'. Returns the writer's error,
// empty on success.
std::string write_synthetic_trace(const std::filesystem::path& path, bool finish = true);

// One node of a distributed training job, as its own `vramtrace run` records it: two processes
// that use the driver's virtual memory API (as PyTorch's expandable segments do) and mark
// their iterations. Every node has the same pids; merged traces tell them apart by host.
//
// upid 1: pid 1000, rank first_rank,     local rank 0, world size `world_size`, utid 1
// upid 2: pid 1001, rank first_rank + 1, local rank 1, world size `world_size`, utid 2
// Each process, on device 0 (addresses and handle values the same in both):
//   seq  allocation                                                callsite  fate
//    1   vmm_reservation 1 GiB @0x7f0000000000 (cuMemAddressReserve)   4      leaked
//    2   vmm_handle 64 MiB, handle 0x1001 (cuMemCreate)                4      leaked
//    3   vmm_mapping 64 MiB @0x7f0000000000 of 0x1001 at offset 0      4      leaked
//    4   device 8 MiB (cuMemAlloc)                                     3      freed at 5
//    (cuMemFree) 6   vmm_handle 32 MiB, handle 0x1002                              4      released
//    at 9 7   vmm_mapping 32 MiB @0x7f0004000000 of 0x1002 at offset 4096   4      unmapped at 8
//   10   device 2 MiB (cuMemAlloc), odd ranks only                     3      leaked
// Device memory in use (device + mappings): 72 MiB after seq 4, 96 MiB after seq 7 (the peak),
// 64 MiB at the end (66 MiB for odd ranks). Counting reservations or handles would change it.
// Markers of each process (ids 1-4 for upid 1, 5-8 for upid 2):
//   range 'epoch 0'    nvtx push, depth 0,                       seq 1 to 9
//   range 'forward'    nvtx push, depth 1 inside 'epoch 0',      seq 2 to 5, color 0xff00ff00
//   mark 'checkpoint'  api,                                      seq 6
//   range 'data_load'  nvtx start, domain 'train', category 3,   seq 7, never ended
// Stacks (innermost first):
//   callsite 3: ?? (libcuda.so.1+0x2000), train_step (train.py:20), main (train.py:10)
//   callsite 4: expand_segment (segments.cpp:30, in libtrain.so), train_step, main
// Modules: /usr/bin/python3 (build id aa11), /usr/lib/libcuda.so.1 (none) and
// /usr/lib/libtrain.so (build id `libtrain_build_id`): nodes with different libtrain builds
// share every frame but expand_segment's.
// meta: command torchrun --nproc-per-node=2 train.py, host `host`. Stats: ring_overflow
// (`overflow_severity`, `overflow_count`) and symbolizer_unresolved (info, 2).
struct NodeTraceSpec {
  std::string host = "node-a";
  int first_rank = 0;
  int world_size = 4;
  std::string libtrain_build_id = "b1";
  storage::Severity overflow_severity = storage::Severity::kInfo;
  std::int64_t overflow_count = 1;
};

inline constexpr std::uint32_t kNodeFirstPid = 1000;
inline constexpr std::uint64_t kVmmHandle = 0x1001;

std::string write_node_trace(const std::filesystem::path& path, const NodeTraceSpec& spec,
                             bool finish = true);

// A trace whose times cannot all be right, as a scribbled ring or clocks that disagree across
// cores leave one. Process upid 1 (pid 7000, started at 1 s, ended at 3 s, exited 0), device 0,
// every allocation 1 MiB of kind device at callsite 2 (make_buffers, main):
//   seq  event                                     time
//    1   a1 allocated (leaked)                     1.000 s
//    2   a2 allocated                              2 s + 1 ns
//    3   a3 allocated (leaked)                     0.5 s: before the process started
//    4   a4 allocated                              2 s + 4 ns
//    5   a2 freed                                  2 s + 5 ns
//    6   a4 freed                                  2 s + 3 ns: before a4 was allocated
//    7   a5 allocated (leaked)                     4 s: after the process ended
//    8   a6 allocated (leaked)                     2.5 s
// Events 2 to 6 share one slice of the time index, which event 3 leaves and event 4 takes up
// again. Device memory in use peaks at 4 MiB, first at seq 4 (and again at seq 8).
inline constexpr std::uint32_t kUntrustedTimesPid = 7000;
std::string write_untrusted_times_trace(const std::filesystem::path& path);

// A trace whose callsites loop, as a damaged or hostile file can have them. Process upid 1
// (pid 7100, exited 0), device 0, leaked:
//   a1 device 1 MiB at callsite 2, a2 device 2 MiB at callsite 4, a3 device 4 MiB at callsite 1
// Callsites: 1 main (no parent); 2 loop_a, whose parent is 3; 3 loop_b, whose parent is 2;
// 4 self_loop, its own parent. The stacks of 2 and 4 never reach a root.
inline constexpr std::uint32_t kCallsiteCyclePid = 7100;
std::string write_callsite_cycle_trace(const std::filesystem::path& path);

}  // namespace vramtrace::testing
