#include "random_trace.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <random>
#include <vector>

#include "storage/schema.h"
#include "storage/time_index.h"
#include "storage/trace_writer.h"

namespace vramtrace::testing {
namespace {

constexpr std::uint64_t M = 1024 * 1024;

}  // namespace

std::string write_random_trace(const std::filesystem::path& path, std::uint64_t* last_seq) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  if (!writer) return error;
  storage::ProcessRow process;
  process.upid = 1;
  process.pid = 77;
  writer->add_process(process);
  std::mt19937_64 random(6);
  struct Pending {
    std::int64_t id;
    std::uint64_t free_after;  // events
  };
  std::vector<Pending> pending;
  std::uint64_t seq = 0;
  std::int64_t next_id = 1;
  const auto step = [&] {
    seq += 1 + random() % 20000;
    return seq;
  };
  for (int i = 0; i < 3000; ++i) {
    storage::AllocationRow row;
    row.id = next_id++;
    row.upid = 1;
    row.kind = storage::allocation_kind::kDevice;
    row.size = 1 + random() % M;
    row.address = 0x1000 * static_cast<std::uint64_t>(row.id);
    row.alloc_seq = step();
    row.alloc_ns = static_cast<std::int64_t>(row.alloc_seq);
    writer->add_allocation(row);
    const std::uint64_t roll = random() % 10;
    if (roll >= 2) pending.push_back({row.id, roll < 7 ? random() % 4 : random() % 3000});
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->free_after-- > 0) {
        ++it;
        continue;
      }
      storage::FreeRow free;
      free.free_seq = step();
      free.free_ns = static_cast<std::int64_t>(free.free_seq);
      writer->set_free(it->id, free);
      it = pending.erase(it);
    }
  }
  *last_seq = seq;
  return writer->finish(&error) ? std::string() : error;
}

std::string write_many_allocations_trace(const std::filesystem::path& path, std::int64_t count) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  if (!writer) return error;
  storage::ProcessRow process;
  process.upid = 1;
  process.pid = 78;
  process.exe = "/usr/bin/many";
  process.argv = {"many"};
  process.unwinder = "frame_pointer";
  writer->add_process(process);
  writer->add_thread(1, 1, 78);
  std::uint64_t seq = 0;
  for (std::int64_t id = 1; id <= count; ++id) {
    storage::AllocationRow row;
    row.id = id;
    row.upid = 1;
    row.kind = storage::allocation_kind::kDevice;
    row.size = row.requested_size = M;
    row.address = 0x7f0000000000 + M * static_cast<std::uint64_t>(id);
    row.alloc_seq = ++seq;
    row.alloc_ns = static_cast<std::int64_t>(seq) * 1000;
    row.alloc_utid = 1;
    writer->add_allocation(row);
    if (id % 2 == 1) {
      storage::FreeRow free;
      free.free_seq = ++seq;
      free.free_ns = static_cast<std::int64_t>(seq) * 1000;
      free.free_utid = 1;
      writer->set_free(id, free);
    }
  }
  storage::ProcessEndRow end;
  end.upid = 1;
  end.end_ns = static_cast<std::int64_t>(seq + 1) * 1000;
  end.exit_status = 0;
  end.complete = true;
  writer->end_process(end);
  return writer->finish(&error, storage::TraceWriter::AllocationIndexes::kLeaveToTimeIndex)
             ? std::string()
             : error;
}

std::string kill_while_indexing(const std::filesystem::path& path) {
  const pid_t child = fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    std::string error;
    // The rollups are built last, inside the build's transaction.
    storage::TimeIndex::open(
        path, [](const storage::RollupSource&, const storage::RollupSink&) { raise(SIGKILL); },
        &error);
    _exit(3);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) return "waitpid failed";
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
    return "the indexing child was not killed in the build (status " + std::to_string(status) + ")";
  std::error_code ec;
  if (!std::filesystem::exists(path.string() + "-journal", ec))
    return "the killed build left no " + path.string() + "-journal";
  return "";
}

}  // namespace vramtrace::testing
