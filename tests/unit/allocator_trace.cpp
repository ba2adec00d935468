#include "allocator_trace.h"

#include <optional>

#include "storage/schema.h"
#include "storage/trace_writer.h"

namespace vramtrace::testing {
namespace {

namespace kind = storage::allocation_kind;
namespace api = storage::api;
constexpr std::uint64_t kKiB = 1024, kMiB = 1024 * kKiB;

std::int64_t at(std::uint64_t seq) {
  return kAllocatorTraceStartNs + static_cast<std::int64_t>(seq) * 1'000'000;
}

struct Row {
  std::int64_t id, upid;
  int kind;
  int device;
  std::uint64_t address, size, requested, seq;
  std::int64_t callsite;
  std::optional<std::int64_t> segment;
  std::optional<std::uint64_t> free_seq;
};

void write_stacks(storage::TraceWriter& writer) {
  writer.add_module(1, "/usr/bin/python3", "aa11");
  writer.add_module(2, "/usr/lib/libc10_cuda.so", "");
  writer.add_module(3, "/usr/lib/libwork.so", "");
  writer.add_frame({1, 1, 0x100, "main", "train.py", 1, false});
  writer.add_frame({2, 1, 0x200, "train_step", "train.py", 5, false});
  writer.add_frame({3, 1, 0x300, "forward", "model.py", 10, false});
  writer.add_frame({4, 1, 0x400, "backward", "train.py", 8, false});
  writer.add_frame({5, 2, 0x5000, "c10::cuda::CUDACachingAllocator::malloc",
                    "CUDACachingAllocator.cpp", 100, false});
  writer.add_frame({6, 3, 0x600, "init_workspace", "lib.cu", 3, false});
  writer.add_callsite(1, std::nullopt, 1, 0);
  writer.add_callsite(2, 1, 2, 1);
  writer.add_callsite(3, 2, 3, 2);
  writer.add_callsite(4, 2, 4, 2);
  writer.add_callsite(5, 3, 5, 3);
  writer.add_callsite(6, 1, 6, 1);
}

void write_process(storage::TraceWriter& writer, std::int64_t upid, std::uint32_t pid,
                   std::int64_t end_seq) {
  storage::ProcessRow process;
  process.upid = upid;
  process.pid = pid;
  process.ppid = 1;
  process.uid = 1000;
  process.host = "gpu-node";
  process.exe = "/usr/bin/python3";
  process.argv = {"python3", "train.py"};
  process.start_ns = kAllocatorTraceStartNs;
  process.start_realtime_ns = 1'700'000'000'000'000'000;
  process.unwinder = "libunwind";
  writer.add_process(process);
  writer.add_thread(upid, upid, pid);
  writer.end_process({upid, at(static_cast<std::uint64_t>(end_seq)), 0, std::nullopt, true});
}

}  // namespace

std::string write_allocator_trace(const std::filesystem::path& path, bool finish) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  if (!writer) return error;
  writer->set_command({"python3", "train.py"});
  write_stacks(*writer);
  write_process(*writer, 1, kAllocatorPid, 15);
  write_process(*writer, 2, kRawPid, 2);

  const Row rows[] = {
      {1, 1, kind::kDevice, 0, 0x10000000, 2 * kMiB, 2 * kMiB, 1, 5, std::nullopt, std::nullopt},
      {2, 1, kind::kBlock, 0, 0x10000000, 512 * kKiB, 400 * kKiB, 2, 3, 1, 6},
      {3, 1, kind::kBlock, 0, 0x10080000, 1 * kMiB, 1 * kMiB, 3, 4, 1, std::nullopt},
      {4, 1, kind::kBlock, 0, 0x10180000, 256 * kKiB, 200 * kKiB, 5, 3, 1, std::nullopt},
      {5, 1, kind::kDevice, 0, 0x20000000, 4 * kMiB, 4 * kMiB, 7, 5, std::nullopt, 11},
      {6, 1, kind::kBlock, 0, 0x20000000, 3 * kMiB, 3 * kMiB, 8, 4, 5, 10},
      {7, 1, kind::kDevice, 0, 0x30000000, 1 * kMiB, 1 * kMiB, 12, 6, std::nullopt, std::nullopt},
      {8, 1, kind::kDevice, 0, 0x30200000, 1 * kMiB, 1 * kMiB, 13, 6, std::nullopt, std::nullopt},
      {9, 2, kind::kDevice, 1, 0x50000000, 8 * kMiB, 8 * kMiB, 1, 6, std::nullopt, std::nullopt},
  };
  for (const Row& r : rows) {
    storage::AllocationRow row;
    row.id = r.id;
    row.upid = r.upid;
    row.kind = r.kind;
    row.api = r.kind == kind::kBlock ? api::kC10ReportMemoryUsage : api::kCudaMalloc;
    row.device = r.device;
    row.address = r.address;
    row.size = r.size;
    row.requested_size = r.requested;
    row.alloc_seq = r.seq;
    row.alloc_ns = at(r.seq);
    row.alloc_utid = r.upid;
    row.alloc_callsite_id = r.callsite;
    row.segment_id = r.segment;
    writer->add_allocation(row);
    if (!r.free_seq) continue;
    storage::FreeRow free;
    free.free_seq = *r.free_seq;
    free.free_ns = at(*r.free_seq);
    free.free_utid = r.upid;
    free.free_api = r.kind == kind::kBlock ? api::kC10ReportMemoryUsage : api::kCudaFree;
    writer->set_free(r.id, free);
  }
  std::int64_t marker_id = 1;
  for (const std::uint64_t seq : {4, 9, 14}) {
    storage::MarkerRow mark;
    mark.id = marker_id++;
    mark.upid = 1;
    mark.utid = 1;
    mark.type = std::string(storage::kMarkerMark);
    mark.source = std::string(storage::kMarkerFromApi);
    mark.name = "iter";
    mark.start_seq = seq;
    mark.start_ns = at(seq);
    writer->add_marker(mark);
  }
  if (!finish) {
    writer->flush();
    return writer->error();
  }
  return writer->finish(&error) ? std::string() : error;
}

}  // namespace vramtrace::testing
