#include "random_trace.h"

#include <random>
#include <vector>

#include "storage/schema.h"
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

}  // namespace vramtrace::testing
