#include "synthetic_trace.h"

#include "storage/schema.h"
#include "storage/trace_writer.h"

namespace vramtrace::testing {
namespace {

namespace kind = storage::allocation_kind;
namespace api = storage::api;

constexpr std::int64_t kSecondStartNs = 2'000'000'000;
constexpr std::int64_t kStepNs = 100'000'000;

std::int64_t at(std::int64_t start_ns, std::uint64_t seq) {
  return start_ns + static_cast<std::int64_t>(seq) * kStepNs;
}

storage::AllocationRow allocation(std::int64_t id, std::int64_t upid, int kind_id, int api_id,
                                  std::uint64_t address, std::uint64_t size, std::uint64_t seq,
                                  std::optional<std::int64_t> callsite) {
  storage::AllocationRow row;
  row.id = id;
  row.upid = upid;
  row.kind = kind_id;
  row.api = api_id;
  row.device = 0;
  row.address = address;
  row.size = size;
  row.requested_size = size;
  row.alloc_seq = seq;
  row.alloc_ns = at(upid == 1 ? kFirstStartNs : kSecondStartNs, seq);
  row.alloc_utid = upid == 1 ? 1 : 3;
  row.alloc_callsite_id = callsite;
  return row;
}

storage::FreeRow free_at(std::int64_t upid, std::uint64_t seq, int api_id,
                         std::optional<std::int64_t> callsite) {
  storage::FreeRow row;
  row.free_seq = seq;
  row.free_ns = at(upid == 1 ? kFirstStartNs : kSecondStartNs, seq);
  row.free_utid = upid == 1 ? 2 : 3;
  row.free_callsite_id = callsite;
  row.free_api = api_id;
  return row;
}

void write_stacks(storage::TraceWriter& writer) {
  writer.add_module(1, kLeakyExe, "0123456789abcdef");
  writer.add_module(2, kTorchModule, "");
  writer.add_mapping(1, 1, 1, 0x555555554000, 0x555555560000, 0x555555554000);
  writer.add_mapping(2, 1, 2, 0x7ffff0000000, 0x7ffff4000000, 0x7ffff0000000);
  writer.add_frame({1, 1, 0x1000, "main", "leaky.cu", 40, false});
  writer.add_frame({2, 1, 0x1100, "make_buffers", "leaky.cu", 12, false});
  writer.add_frame({3, 1, 0x1200, "make_pinned", "leaky.cu", 20, false});
  writer.add_frame({4, 2, 0x5000, std::nullopt, std::nullopt, std::nullopt, false});
  writer.add_frame({5, 1, 0x1110, "inline_helper", "helpers.h", 7, true});
  writer.add_frame({6, 1, 0x1400, "child_work", "leaky.cu", 50, false});
  writer.add_callsite(1, std::nullopt, 1, 0);
  writer.add_callsite(2, 1, 2, 1);
  writer.add_callsite(3, 2, 5, 2);
  writer.add_callsite(4, 1, 3, 1);
  writer.add_callsite(5, 4, 4, 2);
  writer.add_callsite(6, 2, 6, 2);
}

void write_first_process(storage::TraceWriter& writer) {
  writer.add_process({1,
                      4242,
                      1,
                      1000,
                      "node1",
                      kLeakyExe,
                      {"leaky", "--size", "1 MiB"},
                      kFirstStartNs,
                      1'700'000'000'000'000'000,
                      "libunwind"});
  writer.add_thread(1, 1, 4242);
  writer.add_thread(2, 1, 4243);

  writer.add_allocation(
      allocation(1, 1, kind::kDevice, api::kCudaMalloc, 0x7f0000000000, kMiB, 1, 3));
  writer.add_allocation(
      allocation(2, 1, kind::kDevice, api::kCudaMalloc, 0x7f0000100000, 4 * kMiB, 2, 3));
  writer.set_free(1, free_at(1, 3, api::kCudaFree, 2));
  writer.add_allocation(
      allocation(3, 1, kind::kDevice, api::kCudaMalloc, 0x7f0000000000, 2 * kMiB, 4, 3));
  writer.add_allocation(
      allocation(4, 1, kind::kHostPinned, api::kCudaMallocHost, 0x7e0000000000, 8 * kMiB, 5, 4));
  storage::AllocationRow failed =
      allocation(5, 1, kind::kDevice, api::kCudaMalloc, 0, 64 * kGiB, 6, 3);
  failed.result = 2;
  writer.add_allocation(failed);
  storage::AllocationRow async =
      allocation(6, 1, kind::kAsync, api::kCudaMallocAsync, 0x7d0000000000, 3 * kMiB, 7, 5);
  async.device = 1;
  async.stream = 0x55;
  writer.add_allocation(async);
  writer.add_allocation(
      allocation(7, 1, kind::kDevice, api::kCudaMalloc, 0x7f0001000000, 16 * kMiB, 8, 4));
  writer.set_free(7, free_at(1, 9, api::kCudaFree, 4));
  writer.add_allocation(
      allocation(8, 1, kind::kDevice, api::kCudaMalloc, 0x7f0002000000, 512 * kKiB, 10, {}));
  writer.set_free(8, free_at(1, 11, api::kCudaFree, std::nullopt));
  writer.clear_free(8);
  writer.add_bad_free({1, 1, 11, at(kFirstStartNs, 11), 2, api::kCudaFree, 0x7f0002000000, 1,
                       std::nullopt, "call_failed"});
  writer.add_bad_free(
      {2, 1, 12, at(kFirstStartNs, 12), 1, api::kCudaFree, 0xdead, 17, 2, "unknown_address"});
  writer.end_process({1, kLastEndNs, 0, std::nullopt, true});
}

void write_second_process(storage::TraceWriter& writer) {
  writer.add_process({2,
                      4300,
                      4242,
                      1000,
                      "node1",
                      kLeakyExe,
                      {"leaky", "--child"},
                      kSecondStartNs,
                      1'700'000'001'000'000'000,
                      "libunwind"});
  writer.add_thread(3, 2, 4300);
  writer.add_allocation(
      allocation(11, 2, kind::kDevice, api::kCudaMalloc, 0x7f0000000000, 2 * kMiB, 1, 2));
  writer.set_free(11, free_at(2, 2, api::kCudaFree, 2));
  for (std::uint64_t seq = 3; seq <= 5; ++seq) {
    writer.add_allocation(allocation(static_cast<std::int64_t>(9 + seq), 2, kind::kDevice,
                                     api::kCudaMalloc, 0x7f0000000000 + seq * kMiB, kMiB, seq, 6));
  }
  writer.end_process({2, 3'000'000'000, std::nullopt, 9, false});
}

void write_node_stacks(storage::TraceWriter& writer, const NodeTraceSpec& spec) {
  writer.add_module(1, "/usr/bin/python3", "aa11");
  writer.add_module(2, "/usr/lib/libcuda.so.1", "");
  writer.add_module(3, "/usr/lib/libtrain.so", spec.libtrain_build_id);
  writer.add_frame({1, 1, 0x100, "main", "train.py", 10, false});
  writer.add_frame({2, 1, 0x200, "train_step", "train.py", 20, false});
  writer.add_frame({3, 2, 0x2000, std::nullopt, std::nullopt, std::nullopt, false});
  writer.add_frame({4, 3, 0x300, "expand_segment", "segments.cpp", 30, false});
  writer.add_callsite(1, std::nullopt, 1, 0);
  writer.add_callsite(2, 1, 2, 1);
  writer.add_callsite(3, 2, 3, 2);
  writer.add_callsite(4, 2, 4, 2);
}

void write_node_process(storage::TraceWriter& writer, const NodeTraceSpec& spec,
                        std::int64_t upid) {
  const int local_rank = static_cast<int>(upid - 1);
  const int rank = spec.first_rank + local_rank;
  const std::int64_t start_ns = kFirstStartNs + (upid - 1) * 500'000'000;
  const std::int64_t utid = upid;
  storage::ProcessRow process;
  process.upid = upid;
  process.pid = kNodeFirstPid + static_cast<std::uint32_t>(local_rank);
  process.ppid = 999;
  process.uid = 1000;
  process.host = spec.host;
  process.exe = "/usr/bin/python3";
  process.argv = {"python3", "train.py"};
  process.start_ns = start_ns;
  process.start_realtime_ns = 1'700'000'000'000'000'000 + start_ns;
  process.unwinder = "libunwind";
  process.rank = rank;
  process.local_rank = local_rank;
  process.world_size = spec.world_size;
  writer.add_process(process);
  writer.add_thread(utid, upid, process.pid);
  writer.add_mapping(upid * 10 + 1, upid, 1, 0x400000, 0x500000, 0);
  writer.add_mapping(upid * 10 + 2, upid, 3, 0x7ff000000000, 0x7ff000100000, 0x7ff000000000);

  const auto when = [&](std::uint64_t seq) {
    return start_ns + static_cast<std::int64_t>(seq) * 10'000'000;
  };
  const std::int64_t first_id = (upid - 1) * 10;
  const auto add = [&](std::int64_t n, int kind_id, int api_id, std::uint64_t address,
                       std::uint64_t size, std::uint64_t seq, std::int64_t callsite) {
    storage::AllocationRow row;
    row.id = first_id + n;
    row.upid = upid;
    row.kind = kind_id;
    row.api = api_id;
    row.address = address;
    row.size = size;
    row.requested_size = size;
    row.alloc_seq = seq;
    row.alloc_ns = when(seq);
    row.alloc_utid = utid;
    row.alloc_callsite_id = callsite;
    return row;
  };
  const auto free_at = [&](std::int64_t n, std::uint64_t seq, int api_id) {
    writer.set_free(first_id + n, {seq, when(seq), utid, 3, api_id});
  };
  constexpr std::uint64_t kBase = 0x7f0000000000;
  writer.add_allocation(
      add(1, kind::kVmmReservation, api::kCuMemAddressReserve, kBase, kGiB, 1, 4));
  writer.add_allocation(add(2, kind::kVmmHandle, api::kCuMemCreate, kVmmHandle, 64 * kMiB, 2, 4));
  storage::AllocationRow mapping =
      add(3, kind::kVmmMapping, api::kCuMemMap, kBase, 64 * kMiB, 3, 4);
  mapping.vmm_handle = kVmmHandle;
  mapping.vmm_offset = 0;
  writer.add_allocation(mapping);
  writer.add_allocation(add(4, kind::kDevice, api::kCuMemAlloc, 0x7e0000000000, 8 * kMiB, 4, 3));
  free_at(4, 5, api::kCuMemFree);
  writer.add_allocation(
      add(5, kind::kVmmHandle, api::kCuMemCreate, kVmmHandle + 1, 32 * kMiB, 6, 4));
  storage::AllocationRow second =
      add(6, kind::kVmmMapping, api::kCuMemMap, kBase + 64 * kMiB, 32 * kMiB, 7, 4);
  second.vmm_handle = kVmmHandle + 1;
  second.vmm_offset = 4096;
  writer.add_allocation(second);
  free_at(6, 8, api::kCuMemUnmap);
  free_at(5, 9, api::kCuMemRelease);
  if (rank % 2 == 1) {
    writer.add_allocation(add(7, kind::kDevice, api::kCuMemAlloc, 0x7e0001000000, 2 * kMiB, 10, 3));
  }

  const std::int64_t first_marker = (upid - 1) * 4;
  const auto marker = [&](std::int64_t n, std::string_view type, std::string_view source,
                          std::string name, std::uint64_t seq) {
    storage::MarkerRow row;
    row.id = first_marker + n;
    row.upid = upid;
    row.utid = utid;
    row.type = std::string(type);
    row.source = std::string(source);
    row.name = std::move(name);
    row.start_seq = seq;
    row.start_ns = when(seq);
    return row;
  };
  const auto end_at = [&](std::int64_t n, std::uint64_t seq) {
    writer.end_marker(first_marker + n, {seq, when(seq), utid});
  };
  writer.add_marker(marker(1, storage::kMarkerRange, storage::kMarkerFromNvtx, "epoch 0", 1));
  storage::MarkerRow forward =
      marker(2, storage::kMarkerRange, storage::kMarkerFromNvtx, "forward", 2);
  forward.depth = 1;
  forward.parent_id = first_marker + 1;
  forward.color = 0xff00ff00;
  writer.add_marker(forward);
  end_at(2, 5);
  writer.add_marker(marker(3, storage::kMarkerMark, storage::kMarkerFromApi, "checkpoint", 6));
  storage::MarkerRow data_load =
      marker(4, storage::kMarkerRange, storage::kMarkerFromNvtx, "data_load", 7);
  data_load.domain = "train";
  data_load.category = 3;
  writer.add_marker(data_load);
  end_at(1, 9);
  writer.end_process({upid, when(20), 0, std::nullopt, true});
}

}  // namespace

std::string write_node_trace(const std::filesystem::path& path, const NodeTraceSpec& spec,
                             bool finish) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  if (!writer) return error;
  writer->set_command({"torchrun", "--nproc-per-node=2", "train.py"});
  writer->set_meta("host", spec.host);
  write_node_stacks(*writer, spec);
  write_node_process(*writer, spec, 1);
  write_node_process(*writer, spec, 2);
  writer->set_stat("ring_overflow", spec.overflow_severity, spec.overflow_count,
                   "events dropped while the ring was full");
  writer->set_stat("symbolizer_unresolved", storage::Severity::kInfo, 2, "frames without a symbol");
  if (!finish) {
    writer->flush();
    return writer->error();
  }
  return writer->finish(&error) ? std::string() : error;
}

std::string write_synthetic_trace(const std::filesystem::path& path, bool finish) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  if (!writer) return error;
  writer->set_command({"leaky", "--size", "1 MiB"});
  writer->set_meta("host", "node1");
  write_stacks(*writer);
  write_first_process(*writer);
  writer->flush();
  write_second_process(*writer);
  writer->set_stat("ring_overflow", storage::Severity::kDataLoss, 3,
                   "events dropped while the ring was full");
  writer->set_stat("symbolization_failed", storage::Severity::kInfo, 2, "frames without a symbol");
  if (!finish) {
    writer->flush();
    return writer->error();
  }
  return writer->finish(&error) ? std::string() : error;
}

namespace {

// A process of one thread (utid = upid) and module 1 (/usr/bin/leaky).
void add_single_process(storage::TraceWriter& writer, std::uint32_t pid, std::int64_t start_ns) {
  storage::ProcessRow process;
  process.upid = 1;
  process.pid = pid;
  process.exe = kLeakyExe;
  process.argv = {"leaky"};
  process.start_ns = start_ns;
  process.unwinder = "libunwind";
  writer.add_process(process);
  writer.add_thread(1, 1, pid);
  writer.add_module(1, kLeakyExe, "");
}

std::string finished(storage::TraceWriter& writer) {
  std::string error;
  return writer.finish(&error) ? std::string() : error;
}

}  // namespace

std::string write_untrusted_times_trace(const std::filesystem::path& path) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  if (!writer) return error;
  constexpr std::int64_t kSecond = 1'000'000'000;
  add_single_process(*writer, kUntrustedTimesPid, kSecond);
  writer->add_frame({1, 1, 0x1000, "main", "leaky.cu", 40, false});
  writer->add_frame({2, 1, 0x1100, "make_buffers", "leaky.cu", 12, false});
  writer->add_callsite(1, std::nullopt, 1, 0);
  writer->add_callsite(2, 1, 2, 1);
  const auto allocate = [&](std::int64_t id, std::uint64_t seq, std::int64_t ns) {
    storage::AllocationRow row =
        allocation(id, 1, kind::kDevice, api::kCudaMalloc,
                   0x7f0000000000 + static_cast<std::uint64_t>(id) * kMiB, kMiB, seq, 2);
    row.alloc_ns = ns;
    row.alloc_utid = 1;
    writer->add_allocation(row);
  };
  const auto release = [&](std::int64_t id, std::uint64_t seq, std::int64_t ns) {
    storage::FreeRow row = free_at(1, seq, api::kCudaFree, 2);
    row.free_ns = ns;
    row.free_utid = 1;
    writer->set_free(id, row);
  };
  allocate(1, 1, kSecond);
  allocate(2, 2, 2 * kSecond + 1);
  allocate(3, 3, kSecond / 2);
  allocate(4, 4, 2 * kSecond + 4);
  release(2, 5, 2 * kSecond + 5);
  release(4, 6, 2 * kSecond + 3);
  allocate(5, 7, 4 * kSecond);
  allocate(6, 8, 2 * kSecond + kSecond / 2);
  writer->end_process({1, 3 * kSecond, 0, std::nullopt, true});
  return finished(*writer);
}

std::string write_callsite_cycle_trace(const std::filesystem::path& path) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  if (!writer) return error;
  add_single_process(*writer, kCallsiteCyclePid, kFirstStartNs);
  writer->add_frame({1, 1, 0x1000, "main", "leaky.cu", 40, false});
  writer->add_frame({2, 1, 0x1200, "loop_a", "loop.cu", 2, false});
  writer->add_frame({3, 1, 0x1300, "loop_b", "loop.cu", 3, false});
  writer->add_frame({4, 1, 0x1400, "self_loop", "loop.cu", 4, false});
  writer->add_callsite(1, std::nullopt, 1, 0);
  writer->add_callsite(2, 3, 2, 1);
  writer->add_callsite(3, 2, 3, 2);
  writer->add_callsite(4, 4, 4, 1);
  const auto allocate = [&](std::int64_t id, std::uint64_t size, std::uint64_t seq,
                            std::int64_t callsite) {
    storage::AllocationRow row = allocation(
        id, 1, kind::kDevice, api::kCudaMalloc,
        0x7f0000000000 + static_cast<std::uint64_t>(id) * 16 * kMiB, size, seq, callsite);
    row.alloc_utid = 1;
    writer->add_allocation(row);
  };
  allocate(1, kMiB, 1, 2);
  allocate(2, 2 * kMiB, 2, 4);
  allocate(3, 4 * kMiB, 3, 1);
  writer->end_process({1, kLastEndNs, 0, std::nullopt, true});
  return finished(*writer);
}

}  // namespace vramtrace::testing
