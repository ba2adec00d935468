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

// `count` allocations of 1 MiB by one process (upid 1, pid 78, utid 1, device 0, ended with
// status 0), every second one freed by the next event and the rest never freed, finished as
// `vramtrace run` finishes a trace: the allocation table's indexes left to the time index.
// Large counts make a trace whose time index takes the build past SQLite's page cache, so
// that the build writes into the file before it commits. Returns "" or the writer's error.
std::string write_many_allocations_trace(const std::filesystem::path& path, std::int64_t count);

// Builds `path`'s time index into the file (as `vramtrace run` does when the command ends) in
// a child process that is killed (SIGKILL) in the middle of it, after the indexes and the
// spans are written and before the build commits: SQLite's rollback journal is then hot and,
// for a trace like write_many_allocations_trace's with 100,000 allocations or more, the
// trace's own pages partly overwritten. Returns "" or what did not go as planned.
std::string kill_while_indexing(const std::filesystem::path& path);

}  // namespace vramtrace::testing
