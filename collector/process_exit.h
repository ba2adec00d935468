// How a traced process ended, read from /proc while it is a zombie (dead, not yet reaped by
// its parent). That is the one moment the collector, which is not the parent of most traced
// processes, can learn an exit status or a killing signal: the shim cannot report an _exit,
// an abort or a fatal signal itself.
#pragma once

#include <sys/types.h>

#include <optional>

namespace vramtrace::collector {

// The wait status (as waitpid gives it) of `pid` if it is a zombie now; nullopt if it is
// alive (a hang-up from exec), already reaped, or unreadable.
std::optional<int> zombie_wait_status(pid_t pid);

}  // namespace vramtrace::collector
