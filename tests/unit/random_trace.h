// A generated trace of one process (upid 1, pid 77) with lifetimes of every length, for tests
// that check an indexed query against a brute-force sweep of the allocation table.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace vramtrace::testing {

// 3000 allocations of one process; sequence numbers advance by 1 to 20000 per event, and
// lifetimes run from one event to the whole trace (a fifth are never freed), so intervals land
// on every level from 4096-event bins up.
// Times equal sequence numbers. Returns "" or the writer's error; *last_seq: the last event's.
std::string write_random_trace(const std::filesystem::path& path, std::uint64_t* last_seq);

}  // namespace vramtrace::testing
