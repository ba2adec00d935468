// A small trace of a caching allocator over time, for the time-indexed reports (timeline, peak,
// frag, leaks --at/--between/--growth). Written through the real TraceWriter; every number the
// tests expect is derived from the table below. Times: event seq of either process happens at
// kAllocatorTraceStartNs + seq ms.
//
// Process upid 1 (pid 5000, complete), device 0:
//   seq  row                                                           callsite  fate
//    1   S1 device 2 MiB @0x10000000 (the allocator's segment)           5      live (cache)
//    2   B1 block 512 KiB @0x10000000 in S1, requested 400 KiB            3      freed at 6
//    3   B2 block 1 MiB @0x10080000 in S1, requested 1 MiB                4      leaked
//    4   mark 'iter'
//    5   B3 block 256 KiB @0x10180000 in S1, requested 200 KiB            3      leaked
//    6   free B1
//    7   S2 device 4 MiB @0x20000000 (a second segment)                   5      freed at 11
//    8   B4 block 3 MiB @0x20000000 in S2, requested 3 MiB                4      freed at 10
//    9   mark 'iter'
//   10   free B4;  11 free S2 (the allocator emptied its cache)
//   12   R1 device 1 MiB @0x30000000, outside the allocator               6      leaked
//   13   R2 device 1 MiB @0x30200000, outside the allocator               6      leaked
//   14   mark 'iter'
// Process upid 2 (pid 5001, complete), device 1:
//    1   R3 device 8 MiB @0x50000000                                      6      leaked
//
// Device memory in use, upid 1: 2 MiB after 1, 6 MiB after 7 (its peak), 2 after 11, 4 after 13.
// Blocks, upid 1: 1.5 MiB after 3, 1.75 after 5, 1.25 after 6, 4.25 after 8 (peak), 1.25 after 10.
//
// Stacks (innermost first; Python frames in /usr/bin/python3):
//   callsite 3: forward (model.py:10), train_step (train.py:5), main (train.py:1)
//   callsite 4: backward (train.py:8), train_step, main
//   callsite 5: c10::cuda::CUDACachingAllocator::malloc (CUDACachingAllocator.cpp:100, in
//               libc10_cuda.so), forward, train_step, main
//   callsite 6: init_workspace (lib.cu:3, in libwork.so), main
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace vramtrace::testing {

inline constexpr std::int64_t kAllocatorTraceStartNs = 1'000'000'000;
inline constexpr std::uint32_t kAllocatorPid = 5000;
inline constexpr std::uint32_t kRawPid = 5001;

// Returns the writer's error, empty on success. With finish = false meta complete stays '0'.
std::string write_allocator_trace(const std::filesystem::path& path, bool finish = true);

}  // namespace vramtrace::testing
