// The last lines `vramtrace run` writes (on stderr, after the command's own output): what a
// person reading a job's log wants next. Which processes used the GPU, and for each its peak,
// what it leaked and the line that made most of it, its out-of-memory failures; then the
// commands that show more.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/reports/run_digest.h"

namespace vramtrace::cli {

std::string run_digest_text(const std::string& trace_path, std::int64_t allocations,
                            const analysis::RunDigest& digest);

}  // namespace vramtrace::cli
