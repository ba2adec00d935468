// A small PyTorch-like trace whose stacks have Python frames (FrameLanguage::kPython) between
// torch's native ones, as the shim records them: the allocating frame is libc10's, and the
// user's line of Python lies a few native frames and one of torch's own Python frames out. The
// native modules are where a venv's torch wheel puts them
// (/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so, ...). Written through the real
// TraceWriter. Event seq happens at 1 s + seq ms (trace_builder.h); one process (pid 7000), device
// 0, every allocation a cudaMalloc of device memory (no allocator events: each is a leak while
// live).
//
//   seq  what                                                     stack      fate
//    1   cuBLAS workspace 8 MiB                                    workspace  leaked
//   per step s = 0, 1, 2 (range "step s" from 10 + 10 s to 19 + 10 s, with "forward" from
//   11 + 10 s to 14 + 10 s and "optimizer" from 15 + 10 s to 18 + 10 s nested in it):
//   12+10s  activation 64 MiB                                      forward    freed at 19 + 10 s
//   13+10s  hidden 16 MiB (kept in a list by the loop)             forward    leaked
//   16      optimizer state 24 MiB (step 0 only)                   optimizer  leaked
//
// Leaks at the end: 72 MiB at CUDACachingAllocator::malloc (48 MiB through forward at
// model.py:27, 24 MiB through step at train.py:47), 8 MiB at the cuBLAS workspace (no Python
// frame on its stack). Stacks, innermost first:
//   forward:   c10::cuda::CUDACachingAllocator::malloc, at::native::empty_cuda,
//              at::_ops::empty_memory_format::call, torch::autograd::THPVariable_empty,
//              relu (torch/nn/functional.py:1500, Python: torch's own), forward (model.py:27,
//              Python), _call_impl (torch/nn/modules/module.py:1527, Python), train_step
//              (train.py:41, Python), <module> (train.py:60, Python), Py_RunMain, main,
//              __libc_start_main
//   optimizer: c10::cuda::CUDACachingAllocator::malloc, at::native::empty_cuda,
//              at::native::zeros_like, step (train.py:47, Python), train_step (train.py:44,
//              Python), <module> (train.py:60, Python), Py_RunMain, main, __libc_start_main
//   workspace: fused_ops::init_workspace, fused_ops::Runner::run (a C++ extension's own
//              device memory, not a CUDA library's), at::native::addmm_out_cuda, Py_RunMain,
//              main, __libc_start_main
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/schema.h"
#include "storage/trace_writer.h"
#include "trace_builder.h"

namespace vramtrace::testing {

inline constexpr std::uint32_t kPythonTracePid = 7000;

namespace python_trace {

struct Frame {
  std::int64_t module_id;
  const char* function;
  const char* file;
  int line;
  bool python;
};

// Writes the frames of a stack, `inner` then `outer` (each innermost first), and its callsites;
// returns its leaf callsite.
class Stacks {
 public:
  explicit Stacks(storage::TraceWriter* writer) : writer_(writer) {}

  std::int64_t add(std::vector<Frame> stack, const std::vector<Frame>& outer) {
    stack.insert(stack.end(), outer.begin(), outer.end());
    std::optional<std::int64_t> parent;
    int depth = 0;
    for (auto frame = stack.rbegin(); frame != stack.rend(); ++frame, ++depth) {
      const std::int64_t frame_id = frame_id_of(*frame);
      const auto key = std::make_pair(parent.value_or(0), frame_id);
      auto found = callsites_.find(key);
      if (found == callsites_.end()) {
        const std::int64_t id = static_cast<std::int64_t>(callsites_.size()) + 1;
        writer_->add_callsite(id, parent, frame_id, depth);
        found = callsites_.emplace(key, id).first;
      }
      parent = found->second;
    }
    return *parent;
  }

 private:
  std::int64_t frame_id_of(const Frame& frame) {
    const std::string key =
        std::string(frame.function) + '\0' + frame.file + '\0' + std::to_string(frame.line);
    auto found = frames_.find(key);
    if (found != frames_.end()) return found->second;
    storage::FrameRow row;
    row.id = static_cast<std::int64_t>(frames_.size()) + 1;
    row.module_id = frame.module_id;
    // A Python frame's offset is its line, as the collector writes it; a native one's is made up.
    row.rel_pc = frame.python ? static_cast<std::uint64_t>(frame.line)
                              : 0x1000 + static_cast<std::uint64_t>(row.id) * 0x40;
    row.function = frame.function;
    row.file = frame.file;
    row.line = frame.line;
    row.language = frame.python ? storage::FrameLanguage::kPython : storage::FrameLanguage::kNative;
    writer_->add_frame(row);
    frames_.emplace(key, row.id);
    return row.id;
  }

  storage::TraceWriter* writer_;
  std::map<std::string, std::int64_t> frames_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> callsites_;
};

}  // namespace python_trace

// Returns the writer's error, empty on success.
inline std::string write_python_trace(const std::filesystem::path& path) {
  using python_trace::Frame;
  namespace kind = storage::allocation_kind;
  namespace api = storage::api;
  constexpr std::uint64_t kMiB = 1024 * 1024;
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  if (!writer) return error;
  writer->set_command({"python3", "train.py"});
  writer->add_module(1, "/usr/bin/python3.11", "");
  writer->add_module(2, "/venv/lib/python3.11/site-packages/torch/lib/libc10_cuda.so", "");
  writer->add_module(3, "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so", "");
  writer->add_module(4, "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so", "");
  writer->add_module(5, "/venv/lib/python3.11/site-packages/torch/lib/libtorch_python.so", "");
  writer->add_module(6, "/home/user/project/build/libfused_ops.so", "");
  writer->add_module(7, "/usr/lib/x86_64-linux-gnu/libc.so.6", "");

  const Frame malloc{2, "c10::cuda::CUDACachingAllocator::malloc", "CUDACachingAllocator.cpp", 1203,
                     false};
  const Frame empty_cuda{3, "at::native::empty_cuda", "EmptyTensor.cpp", 48, false};
  // The interpreter's frames, outermost of every stack, and the script's own line below them.
  const std::vector<Frame> interpreter{{1, "Py_RunMain", "main.c", 711, false},
                                       {1, "main", "python.c", 15, false},
                                       {7, "__libc_start_main", "libc-start.c", 360, false}};
  std::vector<Frame> script = interpreter;
  script.insert(script.begin(), {1, "<module>", "/home/user/project/train.py", 60, true});
  python_trace::Stacks stacks(writer.get());
  const std::int64_t forward = stacks.add(
      {malloc,
       empty_cuda,
       {4, "at::_ops::empty_memory_format::call", "Operators_0.cpp", 3061, false},
       {5, "torch::autograd::THPVariable_empty", "python_torch_functions.cpp", 412, false},
       // torch's own Python between the bindings and the user's line.
       {1, "relu", "/venv/lib/python3.11/site-packages/torch/nn/functional.py", 1500, true},
       {1, "forward", "/home/user/project/model.py", 27, true},
       {1, "_call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 1527,
        true},
       {1, "train_step", "/home/user/project/train.py", 41, true}},
      script);
  const std::int64_t optimizer =
      stacks.add({malloc,
                  empty_cuda,
                  {4, "at::native::zeros_like", "TensorFactories.cpp", 1745, false},
                  {1, "step", "/home/user/project/train.py", 47, true},
                  {1, "train_step", "/home/user/project/train.py", 44, true}},
                 script);
  const std::int64_t workspace =
      stacks.add({{6, "fused_ops::init_workspace", "workspace.cpp", 88, false},
                  {6, "fused_ops::Runner::run", "runner.cpp", 210, false},
                  {3, "at::native::addmm_out_cuda", "Blas.cpp", 290, false}},
                 interpreter);

  const ProcessWriter process = start_process(*writer, 1, kPythonTracePid);
  std::int64_t allocation_id = 0;
  const auto allocate = [&](std::uint64_t seq, std::uint64_t size, std::int64_t callsite,
                            std::optional<std::uint64_t> free_seq) {
    const std::int64_t id = ++allocation_id;
    process.add(process.row(id, kind::kDevice, api::kCudaMalloc,
                            0x7f0000000000 + static_cast<std::uint64_t>(id) * 0x10000000, size, seq,
                            callsite));
    if (free_seq) process.free(id, *free_seq, api::kCudaFree);
  };
  allocate(1, 8 * kMiB, workspace, std::nullopt);
  std::int64_t marker_id = 0;
  for (std::uint64_t step = 0; step < 3; ++step) {
    const std::uint64_t base = 10 + 10 * step;
    process.range(++marker_id, "step " + std::to_string(step), base, base + 9);
    process.range(++marker_id, "forward", base + 1, base + 4, 1);
    allocate(base + 2, 64 * kMiB, forward, base + 9);
    allocate(base + 3, 16 * kMiB, forward, std::nullopt);
    process.range(++marker_id, "optimizer", base + 5, base + 8, 1);
    if (step == 0) allocate(base + 6, 24 * kMiB, optimizer, std::nullopt);
  }
  writer->end_process({1, ns_of_seq(40), 0, std::nullopt, true});
  return writer->finish(&error) ? std::string() : error;
}

}  // namespace vramtrace::testing
