// A trace whose events come closer together than one of the time index's buckets, for the
// exact zoomed timeline (analysis/time/timeline_window.h). One process (upid 1, pid 600), device 0,
// kind device; the trace starts at a multiple of 1024 ns and spans exactly kLiveBytesBuckets *
// 1024 ns, so each of the index's buckets is 1024 ns wide: [kBurstTraceStartNs + 1024 * i,
// ... + 1024).
//   seq  time (ns after start)  event
//    1        0                 X: 4 MiB (the trace's start)
//    2     5120                 A: 1 MiB, never freed
//    3     5320                 B: 2 MiB
//    4     5720                 free B
//    5     16777215             free X (the trace's end)
// Bucket 5 [5120, 6144) thus holds a 2 MiB spike from 5320 to 5720: its min 4 MiB, max 7 MiB.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace vramtrace::testing {

inline constexpr std::int64_t kBurstTraceStartNs = 1024 * 1'000'000;
inline constexpr std::int64_t kBurstTraceBucketNs = 1024;

// Returns "" or the writer's error.
std::string write_burst_trace(const std::filesystem::path& path);

}  // namespace vramtrace::testing
