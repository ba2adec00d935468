// A job started through a shell, as `vramtrace run -- bash train.sh` records it: the shell
// (pid 8000, `/bin/bash`) exec's into `/usr/bin/python3.11`, which allocates 4 MiB of device
// memory; the script's three helpers (`/usr/bin/sed`, `/usr/bin/git`, `/usr/bin/uname`, pids
// 8001 to 8003) record nothing of the GPU. Written through the real TraceWriter.
//
// Processes as a person means them (analysis/scope/process_chains.h): four chains, one of which
// (pid 8000, named by its python3.11 image, upid 2) recorded GPU memory; three others did not.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

#include "storage/schema.h"
#include "storage/trace_writer.h"
#include "trace_builder.h"

namespace vramtrace::testing {

inline constexpr std::uint32_t kShellTracePid = 8000;
inline constexpr std::int64_t kShellTraceGpuUpid = 2;

// Returns the writer's error, empty on success.
inline std::string write_shell_trace(const std::filesystem::path& path) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  if (!writer) return error;
  writer->set_command({"bash", "train.sh"});
  const auto add = [&](std::int64_t upid, std::uint32_t pid, const char* exe, std::uint64_t seq) {
    storage::ProcessRow process;
    process.upid = upid;
    process.pid = pid;
    process.ppid = 1;
    process.exe = exe;
    process.argv = {exe};
    process.start_ns = ns_of_seq(seq);
    writer->add_process(process);
    writer->add_thread(upid, upid, pid);
    return ProcessWriter{*writer, upid};
  };
  add(1, kShellTracePid, "/bin/bash", 1);
  writer->end_process({1, ns_of_seq(2), std::nullopt, std::nullopt, true});
  const ProcessWriter python = add(kShellTraceGpuUpid, kShellTracePid, "/usr/bin/python3.11", 3);
  std::uint64_t seq = 4;
  for (const auto& [upid, exe] : {std::pair<std::int64_t, const char*>{3, "/usr/bin/sed"},
                                  {4, "/usr/bin/git"},
                                  {5, "/usr/bin/uname"}}) {
    add(upid, kShellTracePid + static_cast<std::uint32_t>(upid) - 2, exe, seq);
    writer->end_process({upid, ns_of_seq(seq + 1), 0, std::nullopt, true});
    seq += 2;
  }
  python.add(python.row(1, storage::allocation_kind::kDevice, storage::api::kCudaMalloc,
                        0x7f0000000000, 4 * 1024 * 1024, 20, std::nullopt));
  writer->end_process({kShellTraceGpuUpid, ns_of_seq(30), 0, std::nullopt, true});
  return writer->finish(&error) ? std::string() : error;
}

}  // namespace vramtrace::testing
