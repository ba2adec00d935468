// vramtrace_trace_generator: writes a synthetic trace of a training job through the real
// TraceWriter, for benchmarking the reports on traces far larger than the tests' (10 million
// allocations and up).
//
//   vramtrace_trace_generator OUT.db [--allocations N] [--processes P] [--seed S]
//                             [--shapes steady|varying] [--storage run|rows]
//                             [--leak-from-one-stack blocks|device]
//
// The shape is PyTorch's: each process drives two devices through a caching allocator. Blocks
// (kind `block`, rounded to 512 bytes) are placed first-fit in 32 MiB segments (kind `device`,
// cudaMalloc), and a new segment is made when none has room. Each iteration is a `iteration`
// range marker: parameters live for the whole run, activations are made in the forward pass and
// freed in reverse in the backward pass, temporaries die at once, and (but for steady shapes)
// one 64 KiB block per iteration is never freed (a leak in progress, for `leaks --growth`).
// A few raw cudaMalloc
// workspaces live outside the allocator. Stacks: 5 Python frames (main, train_step, the pass,
// the layer, the op) under 3 native frames, 96 distinct stacks.
//
// --shapes: `varying` (the default) draws every size anew and leaks a block every iteration:
// nothing repeats, the worst case for storage and reports. `steady` is a healthy job with fixed
// shapes: each op's sizes drawn once, nothing leaked, so its bins repeat and `run` folds them.
// --storage: `run` (the default) writes as `vramtrace run` does: the indexes, time index and
// rollups kept up as rows arrive, short lives packed and repeated bins folded. `rows` writes a
// row per allocation and leaves the time index to the first report, as `run --no-index`.
//
// --leak-from-one-stack writes another shape, the worst case for the leak reports: N
// allocations from one stack, none freed, in one process unless --processes says more (the
// allocations split among them). `blocks`: caching-allocator blocks of 512 B to 8 KiB packed
// into 32 MiB segments, as a PyTorch program that keeps every tensor looks; `device`: plain
// cudaMalloc allocations of 4 KiB to 1 MiB. It leaves the allocation indexes and the time index
// to the first report, as `vramtrace run --no-index` does (`vramtrace timeline OUT.db` builds
// them, as `vramtrace run` would have).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "storage/schema.h"
#include "storage/trace_writer.h"

namespace {

using vramtrace::storage::AllocationRow;
using vramtrace::storage::FreeRow;
using vramtrace::storage::TraceWriter;
namespace kind = vramtrace::storage::allocation_kind;
namespace api = vramtrace::storage::api;

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kSegmentBytes = 32 * kMiB;
constexpr int kLayers = 8;
constexpr int kOps = 4;
constexpr int kPasses = 3;  // forward, backward, optimizer

// Stacks: callsite (pass, layer, op) is 1 + the index; their frames are written once.
std::int64_t callsite_of(int pass, int layer, int op) {
  return 100 + (pass * kLayers + layer) * kOps + op;
}
constexpr std::int64_t kSegmentCallsite = 10;  // the allocator's own cudaMalloc
constexpr std::int64_t kWorkspaceCallsite = 11;

void write_stacks(TraceWriter& writer) {
  writer.add_module(1, "/usr/bin/python3", "aa11");
  writer.add_module(2, "/usr/lib/libc10_cuda.so", "bb22");
  writer.add_frame({1, 1, 0x100, "main", "train.py", 1, false});
  writer.add_frame({2, 1, 0x200, "train_step", "train.py", 20, false});
  writer.add_frame({3, 2, 0x3000, "c10::cuda::CUDACachingAllocator::malloc",
                    "CUDACachingAllocator.cpp", 1000, false});
  writer.add_frame({4, 2, 0x4000, "cudnn_workspace", "workspace.cpp", 40, false});
  writer.add_callsite(1, std::nullopt, 1, 0);
  writer.add_callsite(2, 1, 2, 1);
  writer.add_callsite(kSegmentCallsite, 2, 3, 2);
  writer.add_callsite(kWorkspaceCallsite, 1, 4, 1);
  const char* passes[kPasses] = {"forward", "backward", "step"};
  std::int64_t frame = 10;
  for (int pass = 0; pass < kPasses; ++pass) {
    const std::int64_t pass_callsite = 20 + pass;
    writer.add_frame({frame, 1, static_cast<std::uint64_t>(0x1000 + frame), passes[pass],
                      "train.py", 30 + pass, false});
    writer.add_callsite(pass_callsite, 2, frame++, 2);
    for (int layer = 0; layer < kLayers; ++layer) {
      const std::int64_t layer_callsite = 1000 + pass * kLayers + layer;
      writer.add_frame({frame, 1, static_cast<std::uint64_t>(0x1000 + frame),
                        "layer" + std::to_string(layer), "model.py", 10 + layer, false});
      writer.add_callsite(layer_callsite, pass_callsite, frame++, 3);
      for (int op = 0; op < kOps; ++op) {
        writer.add_frame({frame, 1, static_cast<std::uint64_t>(0x1000 + frame),
                          "op" + std::to_string(op), "ops.py", 100 + op, false});
        writer.add_callsite(callsite_of(pass, layer, op), layer_callsite, frame++, 4);
      }
    }
  }
}

// One process: its sequence, its devices' segments, and first-fit placement in them.
class Process {
 public:
  Process(TraceWriter& writer, std::int64_t upid, std::int64_t* next_id, std::mt19937_64* random)
      : writer_(writer), upid_(upid), next_id_(next_id), random_(*random) {}

  struct Block {
    std::int64_t id;
    int device;
    std::size_t segment;  // index in the device's segments
    std::uint64_t address, size;
  };

  std::uint64_t seq() const { return seq_; }
  std::int64_t ns() const { return ns_of(seq_); }
  std::uint64_t allocations() const { return allocations_; }

  Block allocate_block(int device, std::uint64_t requested, std::int64_t callsite) {
    const std::uint64_t size = (requested + 511) / 512 * 512;
    const auto [segment, address] = place(device, size);
    AllocationRow row = base_row(kind::kBlock, api::kC10ReportMemoryUsage, device, callsite);
    row.address = address;
    row.size = size;
    row.requested_size = requested;
    row.segment_id = segments_[device][segment].id;
    writer_.add_allocation(row);
    return {row.id, device, segment, address, size};
  }

  void free_block(const Block& block) {
    FreeRow free = free_row(api::kC10ReportMemoryUsage);
    writer_.set_free(block.id, free);
    release(segments_[block.device][block.segment], block.address, block.size);
  }

  // A block that is never freed, in the device's last segment or a new one: first fit over
  // segments that nothing is freed from would only look at full ones.
  void leak_block(int device, std::uint64_t requested, std::int64_t callsite) {
    const std::uint64_t size = (requested + 511) / 512 * 512;
    std::vector<Segment>& segments = segments_[device];
    if (segments.empty() || segments.back().largest_free_bound < size) {
      AllocationRow row = base_row(kind::kDevice, api::kCudaMalloc, device, kSegmentCallsite);
      row.address = next_segment_address_;
      next_segment_address_ += kSegmentBytes + 0x200000;
      row.size = row.requested_size = kSegmentBytes;
      writer_.add_allocation(row);
      segments.push_back(Segment{row.id, row.address, {}, kSegmentBytes});
    }
    Segment& segment = segments.back();
    AllocationRow row = base_row(kind::kBlock, api::kC10ReportMemoryUsage, device, callsite);
    row.address = segment.address + kSegmentBytes - segment.largest_free_bound;
    row.size = size;
    row.requested_size = requested;
    row.segment_id = segment.id;
    writer_.add_allocation(row);
    segment.largest_free_bound -= size;  // here: exactly the bytes left at the segment's end
  }

  std::int64_t allocate_raw(int device, std::uint64_t size,
                            std::int64_t callsite = kWorkspaceCallsite) {
    AllocationRow row = base_row(kind::kDevice, api::kCudaMalloc, device, callsite);
    row.address = 0x7f0000000000 + static_cast<std::uint64_t>(row.id) * 0x10000000;
    row.size = row.requested_size = size;
    writer_.add_allocation(row);
    return row.id;
  }

  void free_raw(std::int64_t id) { writer_.set_free(id, free_row(api::kCudaFree)); }

  std::uint64_t next_seq() { return ++seq_; }

 private:
  struct Segment {
    std::int64_t id;
    std::uint64_t address;
    std::map<std::uint64_t, std::uint64_t> free;  // address -> size
    std::uint64_t largest_free_bound;             // no free range is larger
  };

  static std::int64_t ns_of(std::uint64_t seq) {
    return 1'000'000'000 + static_cast<std::int64_t>(seq) * 1000;
  }

  AllocationRow base_row(int kind_id, int api_id, int device, std::int64_t callsite) {
    AllocationRow row;
    row.id = (*next_id_)++;
    row.upid = upid_;
    row.kind = kind_id;
    row.api = api_id;
    row.device = device;
    row.alloc_seq = next_seq();
    row.alloc_ns = ns_of(row.alloc_seq);
    row.alloc_utid = upid_;
    row.alloc_callsite_id = callsite;
    ++allocations_;
    return row;
  }

  FreeRow free_row(int api_id) {
    FreeRow free;
    free.free_seq = next_seq();
    free.free_ns = ns_of(free.free_seq);
    free.free_utid = upid_;
    free.free_api = api_id;
    return free;
  }

  // First fit: (the segment's index, the address).
  std::pair<std::size_t, std::uint64_t> place(int device, std::uint64_t size) {
    std::vector<Segment>& segments = segments_[device];
    for (std::size_t i = 0; i < segments.size(); ++i) {
      Segment& segment = segments[i];
      if (segment.largest_free_bound < size) continue;
      std::uint64_t largest = 0;
      for (auto it = segment.free.begin(); it != segment.free.end(); ++it) {
        if (it->second < size) {
          largest = std::max(largest, it->second);
          continue;
        }
        const std::uint64_t address = it->first;
        const std::uint64_t left = it->second - size;
        segment.free.erase(it);
        if (left != 0) segment.free[address + size] = left;
        return {i, address};
      }
      segment.largest_free_bound = largest;  // nothing larger fits until a free
    }
    // No room: a new segment (rounded up for a block larger than one).
    const std::uint64_t bytes =
        std::max(kSegmentBytes, (size + kSegmentBytes - 1) / kSegmentBytes * kSegmentBytes);
    AllocationRow row = base_row(kind::kDevice, api::kCudaMalloc, device, kSegmentCallsite);
    row.address = next_segment_address_;
    next_segment_address_ += bytes + 0x200000;
    row.size = row.requested_size = bytes;
    writer_.add_allocation(row);
    Segment& segment = segments.emplace_back(Segment{row.id, row.address, {}, bytes});
    if (bytes > size) segment.free[row.address + size] = bytes - size;
    return {segments.size() - 1, row.address};
  }

  static void release(Segment& segment, std::uint64_t address, std::uint64_t size) {
    {
      auto [it, added] = segment.free.emplace(address, size);
      auto next = std::next(it);
      if (next != segment.free.end() && it->first + it->second == next->first) {
        it->second += next->second;
        segment.free.erase(next);
      }
      if (it != segment.free.begin()) {
        auto previous = std::prev(it);
        if (previous->first + previous->second == it->first) {
          previous->second += it->second;
          segment.free.erase(it);
          it = previous;
        }
      }
      segment.largest_free_bound = std::max(segment.largest_free_bound, it->second);
    }
  }

  TraceWriter& writer_;
  std::int64_t upid_;
  std::int64_t* next_id_;
  std::mt19937_64& random_;
  std::uint64_t seq_ = 0, allocations_ = 0;
  std::uint64_t next_segment_address_ = 0x100000000;
  std::map<int, std::vector<Segment>> segments_;
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: vramtrace_trace_generator OUT.db [--allocations N] [--processes P] [--seed S]\n"
      "                                 [--shapes steady|varying] [--storage run|rows]\n"
      "                                 [--leak-from-one-stack blocks|device]\n";
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(usage, stdout);
    return 0;
  }
  // An output named like an option is a mistake, not a file to write 1.3 GB into.
  if (argc < 2 || argv[1][0] == '-' || argc % 2 != 0) {
    std::fputs(usage, stderr);
    return 2;
  }
  std::uint64_t total = 10'000'000;
  std::optional<int> processes_option;
  std::uint64_t seed = 1;
  std::string leak_shape;  // empty: the training job
  std::string shapes = "varying", storage = "run";
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string option = argv[i];
    const std::uint64_t value = std::strtoull(argv[i + 1], nullptr, 10);
    if (option == "--leak-from-one-stack") {
      leak_shape = argv[i + 1];
      if (leak_shape != "blocks" && leak_shape != "device") {
        std::fprintf(stderr,
                     "vramtrace_trace_generator: --leak-from-one-stack takes blocks or "
                     "device\n%s",
                     usage);
        return 2;
      }
    } else if (option == "--shapes" || option == "--storage") {
      const std::string word = argv[i + 1];
      const bool known = option == "--shapes" ? word == "steady" || word == "varying"
                                              : word == "run" || word == "rows";
      if (!known) {
        std::fprintf(stderr, "vramtrace_trace_generator: %s takes %s\n%s", option.c_str(),
                     option == "--shapes" ? "steady or varying" : "run or rows", usage);
        return 2;
      }
      (option == "--shapes" ? shapes : storage) = word;
    } else if (option == "--allocations") {
      total = value;
    } else if (option == "--processes") {
      processes_option = static_cast<int>(value);
    } else if (option == "--seed") {
      seed = value;
    } else {
      std::fprintf(stderr, "vramtrace_trace_generator: unknown option %s\n%s", option.c_str(),
                   usage);
      return 2;
    }
  }
  const int processes = processes_option.value_or(leak_shape.empty() ? 2 : 1);
  std::string error;
  // The leak shape is left for the first report to index, as `vramtrace run --no-index`
  // leaves a trace to its own time index step.
  const bool as_run = storage == "run" && leak_shape.empty();
  auto writer =
      as_run ? TraceWriter::create(argv[1], &error, TraceWriter::TimeIndexUpkeep::kAsRowsArrive,
                                   TraceWriter::RollupUpkeep::kAsRowsArrive,
                                   TraceWriter::Threading::kOwnThread,
                                   TraceWriter::AllocationPacking::kPackAndFoldRepeats)
             : TraceWriter::create(argv[1], &error);
  if (!writer) {
    std::fprintf(stderr, "vramtrace_trace_generator: %s\n", error.c_str());
    return 2;
  }
  writer->set_command({"python3", "train.py"});
  write_stacks(*writer);
  std::mt19937_64 random(seed);
  std::int64_t next_id = 1, next_marker = 1;
  std::vector<Process> workers;
  for (int p = 0; p < processes; ++p) {
    vramtrace::storage::ProcessRow row;
    row.upid = p + 1;
    row.pid = static_cast<std::uint32_t>(10000 + p);
    row.host = "bench";
    row.exe = "/usr/bin/python3";
    row.argv = {"python3", "train.py"};
    row.start_ns = 1'000'000'000;
    row.rank = p;
    writer->add_process(row);
    writer->add_thread(p + 1, p + 1, row.pid);
    workers.emplace_back(*writer, p + 1, &next_id, &random);
  }
  const std::uint64_t per_process = total / static_cast<std::uint64_t>(processes);
  std::uint64_t leaked = 0;
  for (int p = 0; !leak_shape.empty() && p < processes; ++p) {
    Process& process = workers[static_cast<std::size_t>(p)];
    const std::int64_t stack = callsite_of(0, 0, 0);  // main, train_step, forward, layer0, op0
    for (std::uint64_t i = 0; i < per_process; ++i) {
      if (leak_shape == "blocks")
        process.leak_block(0, 512 + random() % (8 * 1024 - 512), stack);
      else
        process.allocate_raw(0, 4096 + random() % kMiB, stack);
      if (i % 65536 == 65535) writer->flush();
    }
    leaked += per_process;
    writer->end_process({p + 1, process.ns() + 1000, 0, std::nullopt, true});
    writer->flush();
  }
  for (int p = 0; leak_shape.empty() && p < processes; ++p) {
    Process& process = workers[static_cast<std::size_t>(p)];
    std::vector<Process::Block> parameters;
    for (int device = 0; device < 2; ++device) {
      for (int i = 0; i < 64; ++i)
        parameters.push_back(process.allocate_block(device, 256 * 1024 + random() % (4 * kMiB),
                                                    callsite_of(2, i % kLayers, 0)));
      process.allocate_raw(device, 64 * kMiB);
    }
    // An op's sizes, by its place in the iteration: drawn once (steady) or each time.
    std::map<int, std::uint64_t> drawn;
    const auto size_at = [&](int place, std::uint64_t range) {
      if (shapes == "varying") return 512 + random() % range;
      const auto [it, added] = drawn.emplace(place, 0);
      if (added) it->second = 512 + random() % range;
      return it->second;
    };
    for (std::uint64_t iteration = 0; process.allocations() < per_process; ++iteration) {
      const int device = static_cast<int>(iteration % 2);
      vramtrace::storage::MarkerRow marker;
      marker.id = next_marker++;
      marker.upid = p + 1;
      marker.utid = p + 1;
      marker.type = "range";
      marker.source = "api";
      marker.name = "iteration";
      marker.start_seq = process.next_seq();
      marker.start_ns = process.ns();
      writer->add_marker(marker);
      std::vector<Process::Block> activations;
      for (int layer = 0; layer < kLayers; ++layer) {
        for (int op = 0; op < kOps; ++op) {
          const int place = layer * kOps + op;
          const std::uint64_t size = size_at(place, 2 * kMiB);
          activations.push_back(process.allocate_block(device, size, callsite_of(0, layer, op)));
          // Temporaries: made and freed at once.
          for (int t = 0; t < 4; ++t) {
            const auto temporary =
                process.allocate_block(device, size_at(1000 + place * 4 + t, 256 * 1024),
                                       callsite_of(0, layer, (op + 1) % kOps));
            process.free_block(temporary);
          }
        }
      }
      for (int layer = kLayers - 1; layer >= 0; --layer) {
        for (int op = 0; op < kOps; ++op) {
          const auto gradient = process.allocate_block(
              device, size_at(2000 + layer * kOps + op, kMiB), callsite_of(1, layer, op));
          process.free_block(activations.back());
          activations.pop_back();
          process.free_block(gradient);
        }
      }
      // The leak in progress: one block per iteration that nobody frees.
      if (shapes == "varying") process.allocate_block(device, 64 * 1024, callsite_of(2, 7, 3));
      vramtrace::storage::MarkerEndRow end;
      end.end_seq = process.next_seq();
      end.end_ns = process.ns();
      end.end_utid = p + 1;
      writer->end_marker(marker.id, end);
      if (iteration % 256 == 0) writer->flush();
    }
    writer->end_process({p + 1, process.ns() + 1000, 0, std::nullopt, true});
    writer->flush();
  }
  if (!writer->finish(&error, leak_shape.empty()
                                  ? TraceWriter::AllocationIndexes::kBuild
                                  : TraceWriter::AllocationIndexes::kLeaveToTimeIndex)) {
    std::fprintf(stderr, "vramtrace_trace_generator: %s\n", error.c_str());
    return 2;
  }
  std::uint64_t written = 0;
  for (const Process& process : workers) written += process.allocations();
  if (!leak_shape.empty()) {
    std::printf("%s: %llu %s allocations leaked from one stack, %llu ids\n", argv[1],
                static_cast<unsigned long long>(leaked), leak_shape.c_str(),
                static_cast<unsigned long long>(next_id - 1));
    return 0;
  }
  std::printf("%s: %llu allocations, %llu ids\n", argv[1], static_cast<unsigned long long>(written),
              static_cast<unsigned long long>(next_id - 1));
  return 0;
}
