// A small PyTorch-like trace for the role limits of the gate and the roles `summary` shows at
// each blocks' peak (analysis/roles/block_roles.h names the rules). Written through the real
// TraceWriter; every number the tests expect is derived from the table below.
//
// Process upid 1 (pid 4000), blocks on device 0 in segment S1 unless said otherwise:
//   seq  row                                                  callsite     fate        role
//    1   S1 device 64 MiB (the allocator's segment)
//    2   B2 block 1 MiB                                       parameter    live        parameter
//    3   B3 block 8 MiB                                       forward      freed at 13 activation
//    4   B4 block 4 MiB                                       forward      freed at 5  temporary
//    6   B5 block 512 B                                       seed         freed at 9  temporary
//    7   B6 block 1 MiB, autograd thread                      engine       live        gradient
//    8   B7 block 2 MiB, autograd thread                      engine       freed at 12 temporary
//   10   S8 device 2 MiB on device 1
//   11   B9 block 256 KiB in S8 (device 1)                    forward      freed at 14 temporary
// Blocks' peak: device 0 at seq 4, 13 MiB (activation 8 MiB, temporary 4 MiB, parameter
// 1 MiB); device 1 at seq 11, 256 KiB (not the process's peak).
//
// Process upid 2 (pid 4100): a device allocation of 1 MiB at seq 1, never freed, and no
// allocator events.
//
// Stacks (innermost first; Python frames of /venv/.../torch and /work/train.py):
//   parameter: Module._apply (torch/nn/modules/module.py), <module> (train.py)
//   forward:   Model.forward (train.py), <module>
//   seed:      backward (torch/autograd/__init__.py), Tensor.backward (torch/_tensor.py), <module>
//   engine:    torch::autograd::Engine::thread_main (native), on thread pt_autograd_0
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace vramtrace::testing {

inline constexpr std::uint32_t kRolesTracePid = 4000;
inline constexpr std::uint32_t kRolesTraceOtherPid = 4100;

// Writes the trace to `path`; returns "" or what went wrong.
std::string write_roles_trace(const std::filesystem::path& path);

}  // namespace vramtrace::testing
