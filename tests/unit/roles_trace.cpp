#include "roles_trace.h"

#include <vector>

#include "trace_builder.h"

namespace vramtrace::testing {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;
constexpr const char* kTorch = "/venv/lib/python3.11/site-packages/torch";
constexpr std::int64_t kAutogradThread = 3;

enum Callsite : std::int64_t { kParameter = 10, kForward, kSeed, kEngine };

// Python frames: {frame id, module id, function, line}; module 1 is the program, the others
// torch's files, in `kPythonFiles` order.
struct PythonFrame {
  std::int64_t id, module;
  const char* function;
  int line;
};
constexpr const char* kPythonFiles[] = {"/work/train.py", "/nn/modules/module.py",
                                        "/autograd/__init__.py", "/_tensor.py"};
constexpr PythonFrame kPythonFrames[] = {{1, 1, "<module>", 5},
                                         {2, 2, "Module._apply", 966},
                                         {3, 1, "Model.forward", 20},
                                         {4, 3, "backward", 350},
                                         {5, 4, "Tensor.backward", 600}};
// Callsites: {id, parent (0: none), frame, depth}.
constexpr std::int64_t kCallsites[][4] = {{1, 0, 1, 0},  {kParameter, 1, 2, 1}, {kForward, 1, 3, 1},
                                          {20, 1, 5, 1}, {kSeed, 20, 4, 2},     {kEngine, 0, 6, 0}};

void add_stacks(storage::TraceWriter& w) {
  std::vector<std::string> files;
  for (const char* file : kPythonFiles)
    files.push_back(files.empty() ? file : std::string(kTorch) + file);
  for (std::size_t m = 0; m < files.size(); ++m)
    w.add_module(static_cast<std::int64_t>(m) + 1, files[m], "");
  w.add_module(5, std::string(kTorch) + "/lib/libtorch_cpu.so", "");
  for (const PythonFrame& f : kPythonFrames) {
    const std::string& file = files[static_cast<std::size_t>(f.module - 1)];
    w.add_frame({f.id, f.module, static_cast<std::uint64_t>(f.line), f.function, file, f.line,
                 false, storage::FrameLanguage::kPython});
  }
  w.add_frame(
      {6, 5, 0x1000,
       "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
       std::nullopt, std::nullopt, false});
  for (const auto& [id, parent, frame, depth] : kCallsites) {
    w.add_callsite(id, parent == 0 ? std::nullopt : std::optional<std::int64_t>(parent), frame,
                   static_cast<int>(depth));
  }
}

}  // namespace

std::string write_roles_trace(const std::filesystem::path& path) {
  std::string error;
  auto w = storage::TraceWriter::create(path, &error);
  if (!w) return error;
  const ProcessWriter p = start_process(*w, 1, kRolesTracePid);
  const ProcessWriter other = start_process(*w, 2, kRolesTraceOtherPid);
  w->add_thread(kAutogradThread, 1, kRolesTracePid + 2);
  w->set_thread_name(kAutogradThread, "pt_autograd_0");
  add_stacks(*w);
  p.add(p.row(1, storage::allocation_kind::kDevice, storage::api::kCudaMalloc, 0x10000000,
              64 * kMiB, 1, std::nullopt));
  const auto block = [&](std::int64_t id, std::uint64_t size, std::uint64_t seq,
                         std::int64_t callsite, std::int64_t utid = 1, std::int64_t segment = 1,
                         int device = 0) {
    storage::AllocationRow r =
        p.row(id, storage::allocation_kind::kBlock, storage::api::kC10ReportMemoryUsage,
              0x10000000 + static_cast<std::uint64_t>(id) * 4 * kMiB, size, seq, callsite);
    r.segment_id = segment;
    r.alloc_utid = utid;
    r.device = device;
    p.add(r);
  };
  const auto free = [&](std::int64_t id, std::uint64_t seq, std::int64_t utid = 1) {
    storage::FreeRow f;
    f.free_seq = seq;
    f.free_ns = ns_of_seq(seq);
    f.free_utid = utid;
    f.free_api = storage::api::kC10ReportMemoryUsage;
    w->set_free(id, f);
  };
  block(2, 1 * kMiB, 2, kParameter);
  block(3, 8 * kMiB, 3, kForward);
  block(4, 4 * kMiB, 4, kForward);
  free(4, 5);
  block(5, 512, 6, kSeed);
  block(6, 1 * kMiB, 7, kEngine, kAutogradThread);
  block(7, 2 * kMiB, 8, kEngine, kAutogradThread);
  free(5, 9);
  storage::AllocationRow second = p.row(8, storage::allocation_kind::kDevice,
                                        storage::api::kCudaMalloc, 0x80000000, 2 * kMiB, 10, {});
  second.device = 1;
  p.add(second);
  block(9, 256 * 1024, 11, kForward, 1, 8, 1);
  free(7, 12, kAutogradThread);
  free(3, 13, kAutogradThread);
  free(9, 14);
  other.add(other.row(20, storage::allocation_kind::kDevice, storage::api::kCudaMalloc, 0x10000000,
                      1 * kMiB, 1, std::nullopt));
  return w->finish(&error) ? "" : error;
}

}  // namespace vramtrace::testing
