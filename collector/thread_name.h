// The name a traced thread gave itself (pthread_setname_np, prctl PR_SET_NAME), as the kernel
// keeps it: PyTorch names its autograd engine's threads "pt_autograd_N", data loaders theirs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vramtrace::collector {

// Reads /proc/PID/task/TID/comm. The collector runs beside the traced processes (same host,
// same PID namespace) and reads it when a thread first appears in a ring, while the thread is
// normally still alive; a thread or process gone by then has no name (nullopt).
std::optional<std::string> read_thread_name(std::uint32_t pid, std::uint32_t tid);

}  // namespace vramtrace::collector
