// libFuzzer target: a trace file as the reports read it. A trace may be truncated, damaged, or
// not a trace at all (storage/trace_reader.h): TraceReader::open must tell so with an
// OpenFailure, and a query on a file damaged past its first pages may only throw TraceError.
// Anything else (a crash, a sanitizer report, another exception) is a finding.
//
// Input: the bytes of the file. Each input is written to a scratch file (in /dev/shm where
// there is one), opened, and read as `vramtrace summary` and `vramtrace leaks` read it.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/reports/leak_report.h"
#include "analysis/reports/summary.h"
#include "storage/trace_reader.h"

namespace {

namespace fs = std::filesystem;
using vramtrace::storage::TraceReader;

const fs::path& scratch_path() {
  static const fs::path path =
      (fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path()) /
      ("vramtrace-reader-fuzz-" + std::to_string(getpid()) + ".db");
  // libFuzzer exits through exit(): leave no scratch file behind.
  static const int removed_at_exit = std::atexit([] {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix, ignored);
  });
  (void)removed_at_exit;
  return path;
}

void read_everything(const TraceReader& trace) {
  trace.meta_value("complete");
  trace.recorded_command();
  for (int id = 0; id < 40; ++id) {
    trace.kind_name(id);
    trace.api_name(id);
  }
  trace.processes();
  trace.threads();
  std::vector<std::int64_t> callsites;
  trace.for_each_allocation({}, [&](const vramtrace::storage::AllocationRecord& a) {
    const auto& id = a.allocation.alloc_callsite_id;
    if (id && callsites.size() < 64) callsites.push_back(*id);
  });
  for (std::int64_t id : callsites) trace.stack(id);
  size_t events = 0;
  trace.for_each_allocation_event([&](const vramtrace::storage::AllocationEvent&) { ++events; });
  trace.bad_frees();
  trace.markers();
  trace.stats();
  vramtrace::analysis::build_summary(trace);
  vramtrace::analysis::build_leak_report(trace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path& path = scratch_path();
  for (const char* suffix : {"-wal", "-shm"}) fs::remove(path.string() + suffix);
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) __builtin_trap();  // the fuzzer's own environment is broken
  if (size != 0 && std::fwrite(data, 1, size, file) != size) __builtin_trap();
  std::fclose(file);

  vramtrace::storage::OpenFailure failure;
  std::unique_ptr<TraceReader> trace = TraceReader::open(path, &failure);
  if (!trace) {
    if (failure.message.empty()) __builtin_trap();  // every failure must say what happened
    return 0;
  }
  try {
    read_everything(*trace);
  } catch (const vramtrace::storage::TraceError& e) {
    if (std::string(e.what()).empty()) __builtin_trap();
  }
  return 0;
}
