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

}  // namespace vramtrace::testing
