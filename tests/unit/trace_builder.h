// Hand-built traces for the analysis and CLI tests: rows written one by one through the real
// TraceWriter, so that each test's table of allocations is the whole truth of its trace.
// Times are derived from sequence numbers (1 ms per seq after 1 s) unless a row says otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "storage/schema.h"
#include "storage/trace_writer.h"

namespace vramtrace::testing {

inline std::int64_t ns_of_seq(std::uint64_t seq) {
  return 1'000'000'000 + static_cast<std::int64_t>(seq) * 1'000'000;
}

// The stacks most hand-built traces use, innermost first, in module 1 (/work/train.py):
//   callsite 1: main (train.py:10)
//   callsite 2: forward (model.py:42), main
inline void add_train_stacks(storage::TraceWriter& w) {
  w.add_module(1, "/work/train.py", "");
  w.add_frame({1, 1, 0x10, "main", "train.py", 10, false});
  w.add_frame({2, 1, 0x20, "forward", "model.py", 42, false});
  w.add_callsite(1, std::nullopt, 1, 0);
  w.add_callsite(2, 1, 2, 1);
}

// One process's rows.
struct ProcessWriter {
  storage::TraceWriter& w;
  std::int64_t upid;

  storage::AllocationRow row(std::int64_t id, int kind_id, int api_id, std::uint64_t address,
                             std::uint64_t size, std::uint64_t seq,
                             std::optional<std::int64_t> callsite) const {
    storage::AllocationRow r;
    r.id = id;
    r.upid = upid;
    r.kind = kind_id;
    r.api = api_id;
    r.address = address;
    r.size = r.requested_size = size;
    r.alloc_seq = seq;
    r.alloc_ns = ns_of_seq(seq);
    r.alloc_utid = upid;
    r.alloc_callsite_id = callsite;
    return r;
  }
  void add(const storage::AllocationRow& r) const { w.add_allocation(r); }
  void free(std::int64_t id, std::uint64_t seq, int api_id,
            std::optional<std::uint64_t> allocated = {},
            std::optional<std::uint64_t> reserved = {}) const {
    storage::FreeRow f;
    f.free_seq = seq;
    f.free_ns = ns_of_seq(seq);
    f.free_utid = upid;
    f.free_api = api_id;
    f.allocator_allocated = allocated;
    f.allocator_reserved = reserved;
    w.set_free(id, f);
  }
  // A block of PyTorch's allocator in `segment`, made at `callsite`.
  void block(std::int64_t id, std::uint64_t address, std::uint64_t size, std::uint64_t seq,
             std::int64_t segment, std::optional<std::uint64_t> allocated = {},
             std::optional<std::uint64_t> reserved = {}, std::int64_t callsite = 2) const {
    storage::AllocationRow r =
        row(id, storage::allocation_kind::kBlock, storage::api::kC10ReportMemoryUsage, address,
            size, seq, callsite);
    r.segment_id = segment;
    r.allocator_allocated = allocated;
    r.allocator_reserved = reserved;
    add(r);
  }
  // A range from start_seq to end_seq (unset: never ended), begun by the process's thread.
  void range(std::int64_t id, const std::string& name, std::uint64_t start_seq,
             std::optional<std::uint64_t> end_seq, int depth = 0) const {
    storage::MarkerRow m;
    m.id = id;
    m.upid = upid;
    m.utid = upid;
    m.type = std::string(storage::kMarkerRange);
    m.source = std::string(storage::kMarkerFromApi);
    m.name = name;
    m.start_seq = start_seq;
    m.start_ns = ns_of_seq(start_seq);
    m.depth = depth;
    w.add_marker(m);
    if (end_seq) w.end_marker(id, {*end_seq, ns_of_seq(*end_seq), upid});
  }
};

// A process (pid `pid`, thread utid = upid with tid pid + 1) started at 1 s.
inline ProcessWriter start_process(storage::TraceWriter& w, std::int64_t upid, std::uint32_t pid) {
  storage::ProcessRow p;
  p.upid = upid;
  p.pid = pid;
  p.exe = "/usr/bin/python3";
  p.start_ns = 1'000'000'000;
  w.add_process(p);
  w.add_thread(upid, upid, pid + 1);
  return {w, upid};
}

}  // namespace vramtrace::testing
