// A trace whose events come closer together than one of the time index's buckets, for the
// exact zoomed timeline (analysis/timeline_window.h). One process (upid 1, pid 600), device 0,
// kind device; the trace spans exactly kBurstTraceBuckets * 1000 ns, so each of the index's
// buckets is 1000 ns wide: [kBurstTraceStartNs + 1000 * i, ... + 1000).
//   seq  time (ns after start)  event
//    1        0                 X: 4 MiB (the trace's start)
//    2     5000                 A: 1 MiB, never freed
//    3     5200                 B: 2 MiB
//    4     5600                 free B
//    5     16383999             free X (the trace's end)
// Bucket 5 [5000, 6000) thus holds a 2 MiB spike from 5200 to 5600: its min 4 MiB, max 7 MiB.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace vramtrace::testing {

inline constexpr std::int64_t kBurstTraceStartNs = 1'000'000'000;
inline constexpr std::int64_t kBurstTraceBucketNs = 1000;

// Returns "" or the writer's error.
std::string write_burst_trace(const std::filesystem::path& path);

}  // namespace vramtrace::testing
