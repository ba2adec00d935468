#include "storage/trace_writer.h"

#include <atomic>
#include <mutex>
#include <type_traits>
#include <utility>
#include <variant>

#include "storage/batch_pipe.h"

namespace vramtrace::storage {
namespace {

// Each call to the writer, as its thread replays it.
struct SetMeta {
  std::string key, value;
};
struct SetCommand {
  std::vector<std::string> argv;
};
struct AddProcess {
  ProcessRow row;
};
struct EndProcess {
  ProcessEndRow row;
};
struct AddThread {
  std::int64_t utid = 0, upid = 0;
  std::uint32_t tid = 0;
};
struct SetThreadName {
  std::int64_t utid = 0;
  std::string name;
};
struct AddModule {
  std::int64_t id = 0;
  std::string path, build_id_hex;
};
struct AddMapping {
  std::int64_t id = 0, upid = 0, module_id = 0;
  std::uint64_t start = 0, end = 0, load_bias = 0;
};
struct AddFrame {
  FrameRow row;
};
struct AddCallsite {
  std::int64_t id = 0;
  std::optional<std::int64_t> parent_id;
  std::int64_t frame_id = 0;
  int depth = 0;
};
// The two calls made in place in a batch (call_in_place) have constructors: clang before 16
// does not make an aggregate from parentheses.
struct AddAllocation {
  explicit AddAllocation(const AllocationRow& made) : row(made) {}
  AllocationRow row;
};
struct SetFree {
  SetFree(std::int64_t freed_id, const FreeRow& made) : allocation_id(freed_id), row(made) {}
  std::int64_t allocation_id = 0;
  FreeRow row;
};
struct ClearFree {
  std::int64_t allocation_id = 0;
};
struct AddBadFree {
  BadFreeRow row;
};
struct AddFailureDeviceMemory {
  std::int64_t allocation_id = 0;
  std::uint64_t device_free = 0, device_total = 0;
};
struct FailBadFree {
  std::int64_t bad_free_id = 0;
  std::int32_t result = 0;
  std::optional<std::int64_t> callsite_id;
};
struct AddMarker {
  MarkerRow row;
};
struct EndMarker {
  std::int64_t marker_id = 0;
  MarkerEndRow row;
};
struct AddMemoryActivity {
  MemoryActivityRow row;
};
struct SetStat {
  std::string name;
  Severity severity = Severity::kInfo;
  std::int64_t value = 0;
  std::string description;
};
struct Flush {};

using Call = std::variant<SetMeta, SetCommand, AddProcess, EndProcess, AddThread, SetThreadName,
                          AddModule, AddMapping, AddFrame, AddCallsite, AddAllocation, SetFree,
                          ClearFree, AddBadFree, AddFailureDeviceMemory, FailBadFree, AddMarker,
                          EndMarker, AddMemoryActivity, SetStat, Flush>;

// Each call replayed on the file, as the caller made it.
void replay(TraceFileWriter& f, const SetMeta& c) {
  f.set_meta(c.key, c.value);
}
void replay(TraceFileWriter& f, const SetCommand& c) {
  f.set_command(c.argv);
}
void replay(TraceFileWriter& f, const AddProcess& c) {
  f.add_process(c.row);
}
void replay(TraceFileWriter& f, const EndProcess& c) {
  f.end_process(c.row);
}
void replay(TraceFileWriter& f, const AddThread& c) {
  f.add_thread(c.utid, c.upid, c.tid);
}
void replay(TraceFileWriter& f, const SetThreadName& c) {
  f.set_thread_name(c.utid, c.name);
}
void replay(TraceFileWriter& f, const AddModule& c) {
  f.add_module(c.id, c.path, c.build_id_hex);
}
void replay(TraceFileWriter& f, const AddMapping& c) {
  f.add_mapping(c.id, c.upid, c.module_id, c.start, c.end, c.load_bias);
}
void replay(TraceFileWriter& f, const AddFrame& c) {
  f.add_frame(c.row);
}
void replay(TraceFileWriter& f, const AddCallsite& c) {
  f.add_callsite(c.id, c.parent_id, c.frame_id, c.depth);
}
void replay(TraceFileWriter& f, const AddAllocation& c) {
  f.add_allocation(c.row);
}
void replay(TraceFileWriter& f, const SetFree& c) {
  f.set_free(c.allocation_id, c.row);
}
void replay(TraceFileWriter& f, const ClearFree& c) {
  f.clear_free(c.allocation_id);
}
void replay(TraceFileWriter& f, const AddBadFree& c) {
  f.add_bad_free(c.row);
}
void replay(TraceFileWriter& f, const AddFailureDeviceMemory& c) {
  f.add_failure_device_memory(c.allocation_id, c.device_free, c.device_total);
}
void replay(TraceFileWriter& f, const FailBadFree& c) {
  f.fail_bad_free(c.bad_free_id, c.result, c.callsite_id);
}
void replay(TraceFileWriter& f, const AddMarker& c) {
  f.add_marker(c.row);
}
void replay(TraceFileWriter& f, const EndMarker& c) {
  f.end_marker(c.marker_id, c.row);
}
void replay(TraceFileWriter& f, const AddMemoryActivity& c) {
  f.add_memory_activity(c.row);
}
void replay(TraceFileWriter& f, const SetStat& c) {
  f.set_stat(c.name, c.severity, c.value, c.description);
}
void replay(TraceFileWriter& f, const Flush&) {
  f.flush();
}

void replay(TraceFileWriter& file, const Call& call) {
  std::visit([&file](const auto& c) { replay(file, c); }, call);
}

// Calls handed over at once: a few milliseconds of the writer's work in a storm, about 1 MiB.
constexpr std::size_t kCallsPerBatch = 4096;
// Batches that may wait for the writer's thread before the collector waits for it.
constexpr std::size_t kBatchesWaiting = 4;

}  // namespace

struct TraceWriter::Impl {
  std::unique_ptr<TraceFileWriter> file;
  // Threading::kOwnThread while it runs; else each call goes to `file` at once.
  std::unique_ptr<BatchPipe<Call>> pipe;
  // The first failure the writer's thread met: `error` is set once, before `failed`.
  std::atomic<bool> failed{false};
  std::string error;

  // Queued on the pipe (the Call made in the batch from `c`), or written at once.
  template <typename C>
  void call(C&& c) {
    call_in_place<std::remove_cvref_t<C>>(std::forward<C>(c));
  }
  // The same, the call made in its place in the batch from `args`: for the calls of every
  // allocation and free, whose rows a temporary would copy once more.
  template <class C, class... Args>
  void call_in_place(Args&&... args) {
    if (pipe) {
      pipe->push(std::in_place_type<C>, std::forward<Args>(args)...);
    } else {
      replay(*file, C{std::forward<Args>(args)...});
    }
  }

  void write_batch(std::vector<Call>& batch) {
    for (const Call& c : batch) replay(*file, c);
    if (!failed.load(std::memory_order_relaxed) && !file->ok()) {
      error = file->error();
      failed.store(true, std::memory_order_release);
    }
  }

  // Every call written, and the thread gone: `file` is the caller's again.
  void stop_thread() {
    if (!pipe) return;
    pipe->stop();
    pipe.reset();
  }
};

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TraceWriter::~TraceWriter() {
  impl_->stop_thread();
}

std::unique_ptr<TraceWriter> TraceWriter::create(const std::filesystem::path& path,
                                                 std::string* error, TimeIndexUpkeep upkeep,
                                                 RollupUpkeep rollups, Threading threading,
                                                 AllocationPacking packing) {
  auto file = TraceFileWriter::create(path, error, upkeep, rollups, packing);
  if (!file) return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->file = std::move(file);
  if (threading == Threading::kOwnThread) {
    Impl* const state = impl.get();
    impl->pipe = std::make_unique<BatchPipe<Call>>(
        kCallsPerBatch, kBatchesWaiting,
        [state](std::vector<Call>& batch) { state->write_batch(batch); });
  }
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(impl)));
}

void TraceWriter::set_meta(std::string_view key, std::string_view value) {
  impl_->call(SetMeta{std::string(key), std::string(value)});
}
void TraceWriter::set_command(const std::vector<std::string>& argv) {
  impl_->call(SetCommand{argv});
}
void TraceWriter::add_process(const ProcessRow& row) {
  impl_->call(AddProcess{row});
}
void TraceWriter::end_process(const ProcessEndRow& row) {
  impl_->call(EndProcess{row});
}
void TraceWriter::add_thread(std::int64_t utid, std::int64_t upid, std::uint32_t tid) {
  impl_->call(AddThread{utid, upid, tid});
}
void TraceWriter::set_thread_name(std::int64_t utid, std::string_view name) {
  impl_->call(SetThreadName{utid, std::string(name)});
}
void TraceWriter::add_module(std::int64_t id, std::string_view path,
                             std::string_view build_id_hex) {
  impl_->call(AddModule{id, std::string(path), std::string(build_id_hex)});
}
void TraceWriter::add_mapping(std::int64_t id, std::int64_t upid, std::int64_t module_id,
                              std::uint64_t start, std::uint64_t end, std::uint64_t load_bias) {
  impl_->call(AddMapping{id, upid, module_id, start, end, load_bias});
}
void TraceWriter::add_frame(const FrameRow& row) {
  impl_->call(AddFrame{row});
}
void TraceWriter::add_callsite(std::int64_t id, std::optional<std::int64_t> parent_id,
                               std::int64_t frame_id, int depth) {
  impl_->call(AddCallsite{id, parent_id, frame_id, depth});
}
void TraceWriter::add_allocation(const AllocationRow& row) {
  impl_->call_in_place<AddAllocation>(row);
}
void TraceWriter::set_free(std::int64_t allocation_id, const FreeRow& row) {
  impl_->call_in_place<SetFree>(allocation_id, row);
}
void TraceWriter::clear_free(std::int64_t allocation_id) {
  impl_->call(ClearFree{allocation_id});
}
void TraceWriter::add_failure_device_memory(std::int64_t allocation_id, std::uint64_t device_free,
                                            std::uint64_t device_total) {
  impl_->call(AddFailureDeviceMemory{allocation_id, device_free, device_total});
}
void TraceWriter::add_bad_free(const BadFreeRow& row) {
  impl_->call(AddBadFree{row});
}
void TraceWriter::fail_bad_free(std::int64_t bad_free_id, std::int32_t result,
                                std::optional<std::int64_t> callsite_id) {
  impl_->call(FailBadFree{bad_free_id, result, callsite_id});
}
void TraceWriter::add_marker(const MarkerRow& row) {
  impl_->call(AddMarker{row});
}
void TraceWriter::end_marker(std::int64_t marker_id, const MarkerEndRow& row) {
  impl_->call(EndMarker{marker_id, row});
}
void TraceWriter::add_memory_activity(const MemoryActivityRow& row) {
  impl_->call(AddMemoryActivity{row});
}
void TraceWriter::set_stat(std::string_view name, Severity severity, std::int64_t value,
                           std::string_view description) {
  impl_->call(SetStat{std::string(name), severity, value, std::string(description)});
}

void TraceWriter::flush() {
  impl_->call(Flush{});
  if (impl_->pipe) impl_->pipe->send();  // a commit is for readers now, not a batch later
}

bool TraceWriter::finish(std::string* error, AllocationIndexes allocation_indexes) {
  impl_->stop_thread();
  return impl_->file->finish(error, allocation_indexes);
}

bool TraceWriter::ok() const {
  if (impl_->pipe) return !impl_->failed.load(std::memory_order_acquire);
  return impl_->file->ok();
}

const std::string& TraceWriter::error() const {
  static const std::string kNoFailure;
  if (impl_->pipe) return impl_->failed.load(std::memory_order_acquire) ? impl_->error : kNoFailure;
  return impl_->file->error();
}

}  // namespace vramtrace::storage
