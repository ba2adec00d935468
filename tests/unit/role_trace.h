// A hand-built PyTorch-like trace whose blocks have known roles (analysis/roles/block_roles.h), for
// the tests of views over time by role: process upid 1 (pid 4000) with its autograd thread
// `pt_autograd_0`, one 64 MiB segment at seq 1 and these blocks (times: ns_of_seq):
//   seq  2  1 MiB   parameter        Module._apply, never freed
//   seq  3  8 MiB   activation       Model.forward, freed by the autograd thread at seq 12
//   seq  4  4 MiB   temporary        Model.forward, freed at seq 5
//   seq  6  512 B   temporary        torch.autograd.backward (the seed), freed at seq 9
//   seq  7  1 MiB   gradient         the autograd engine's thread, never freed
//   seq  8  2 MiB   temporary        the autograd engine's thread, freed at seq 11
//   seq 13  2 MiB   optimizer_state  Adam._init_group, never freed
//   seq 14  1 MiB   temporary        _multi_tensor_adam, freed at seq 15
// So after seq 4: parameter 1 MiB, activation 8 MiB, temporary 4 MiB; after seq 8: parameter
// 1 MiB, activation 8 MiB, gradient 1 MiB, temporary 2 MiB + 512; after seq 14: parameter,
// gradient and temporary 1 MiB each, optimizer_state 2 MiB.
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <string>

#include "storage/trace_writer.h"
#include "trace_builder.h"

namespace vramtrace::testing {

// Empty on success, else the writer's error.
inline std::string write_role_trace(const std::filesystem::path& path) {
  constexpr std::uint64_t kMiB = 1 << 20;
  const std::string torch = "/venv/lib/python3.11/site-packages/torch";
  std::string error;
  auto w = storage::TraceWriter::create(path, &error);
  if (!w) return error;
  const ProcessWriter p = start_process(*w, 1, 4000);
  w->add_thread(2, 1, 4002);
  w->set_thread_name(2, "pt_autograd_0");

  // Modules 1..5, then each frame (id = index + 1) as {module, function, line}; Python unless
  // its line is 0.
  const std::array<std::string, 6> modules{
      "/work/train.py",         torch + "/nn/modules/module.py",
      torch + "/optim/adam.py", torch + "/autograd/__init__.py",
      torch + "/_tensor.py",    torch + "/lib/libtorch_cpu.so"};
  for (std::size_t m = 0; m < modules.size(); ++m)
    w->add_module(static_cast<std::int64_t>(m) + 1, modules[m], "");
  struct Frame {
    std::int64_t module;
    const char* function;
    int line;
  };
  const std::array<Frame, 9> frames{{
      {1, "<module>", 5},           // 1
      {2, "Module._apply", 966},    // 2
      {1, "Model.forward", 20},     // 3
      {4, "backward", 350},         // 4
      {5, "Tensor.backward", 600},  // 5
      {6,
       "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> "
       "const&)",
       0},                             // 6
      {3, "Adam._init_group", 150},    // 7
      {3, "Adam.step", 230},           // 8
      {3, "_multi_tensor_adam", 791},  // 9
  }};
  for (std::size_t f = 0; f < frames.size(); ++f) {
    const Frame& frame = frames[f];
    storage::FrameRow row{static_cast<std::int64_t>(f) + 1, frame.module,
                          static_cast<std::uint64_t>(frame.line ? frame.line : 0x1000)};
    row.function = frame.function;
    if (frame.line) {
      row.file = modules[static_cast<std::size_t>(frame.module) - 1];
      row.line = frame.line;
      row.language = storage::FrameLanguage::kPython;
    }
    w->add_frame(row);
  }
  // Callsites {id, parent, frame, depth}: 10 parameter, 11 forward, 12 the seed, 13 the
  // engine, 14 _init_group, 15 the step; 1, 20 and 21 their outer frames.
  struct Callsite {
    std::int64_t id;
    std::optional<std::int64_t> parent;
    std::int64_t frame;
    int depth;
  };
  for (const Callsite& c : std::array<Callsite, 9>{{{1, std::nullopt, 1, 0},
                                                    {10, 1, 2, 1},
                                                    {11, 1, 3, 1},
                                                    {20, 1, 5, 1},
                                                    {12, 20, 4, 2},
                                                    {13, std::nullopt, 6, 0},
                                                    {21, 1, 8, 1},
                                                    {14, 21, 7, 2},
                                                    {15, 21, 9, 2}}})
    w->add_callsite(c.id, c.parent, c.frame, c.depth);

  p.add(p.row(1, storage::allocation_kind::kDevice, storage::api::kCudaMalloc, 0x10000000,
              64 * kMiB, 1, std::nullopt));
  struct Block {
    std::uint64_t size, seq;
    std::int64_t callsite, utid;
    std::uint64_t free_seq;  // 0: never freed
    std::int64_t free_utid;
  };
  const std::array<Block, 8> blocks{{{1 * kMiB, 2, 10, 1, 0, 1},
                                     {8 * kMiB, 3, 11, 1, 12, 2},
                                     {4 * kMiB, 4, 11, 1, 5, 1},
                                     {512, 6, 12, 1, 9, 1},
                                     {1 * kMiB, 7, 13, 2, 0, 2},
                                     {2 * kMiB, 8, 13, 2, 11, 2},
                                     {2 * kMiB, 13, 14, 1, 0, 1},
                                     {1 * kMiB, 14, 15, 1, 15, 1}}};
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const auto id = static_cast<std::int64_t>(b) + 2;
    storage::AllocationRow r =
        p.row(id, storage::allocation_kind::kBlock, storage::api::kC10ReportMemoryUsage,
              0x10000000 + static_cast<std::uint64_t>(id) * 4 * kMiB, blocks[b].size, blocks[b].seq,
              blocks[b].callsite);
    r.segment_id = 1;
    r.alloc_utid = blocks[b].utid;
    p.add(r);
  }
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].free_seq == 0) continue;
    storage::FreeRow f;
    f.free_seq = blocks[b].free_seq;
    f.free_ns = ns_of_seq(blocks[b].free_seq);
    f.free_utid = blocks[b].free_utid;
    f.free_api = storage::api::kC10ReportMemoryUsage;
    w->set_free(static_cast<std::int64_t>(b) + 2, f);
  }
  if (!w->finish(&error)) return error;
  return {};
}

}  // namespace vramtrace::testing
