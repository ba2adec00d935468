// Merging traces: the traces of one job, recorded on several nodes (one `vramtrace run` each),
// become one trace that the reports and the viewer read as if one collector had seen it all.
//
// Contract:
// - Every row of every input is in the output once, ids remapped so that they stay unique:
//   processes, threads, mappings, allocations, bad frees and markers. Modules (same path and
//   build id), frames (same module, rel_pc, function, file, line and inlined) and callsites
//   (same parent and frame) are deduplicated, so a stack shared by two inputs is one stack.
//   Host names and ranks are kept as recorded. Stats are summed by name, with the worst
//   severity. The enumeration rows (`allocation_kind`, `api`) are the union.
// - meta: `merged_from` is a JSON array of the inputs' paths as given; `complete` is '1' only
//   when every input is complete; `command` is the first input's; other keys (`host`,
//   `vramtrace_version`, ...) are kept when every input has the same value, else left out.
// - Inputs are opened with TraceReader first: a bad input fails the merge with the reader's
//   one-line message before anything is written. The output is written to OUTPUT.tmp-PID and
//   renamed into place at the end, so a failed merge leaves no output, not even half of one.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace vramtrace::storage {

struct MergeOptions {
  bool replace_existing = false;  // replace an existing output file (`--force`)
  // Called after each input is merged, with how many are done and how many there are.
  std::function<void(std::size_t merged, std::size_t total)> progress;
};

struct MergeResult {
  bool ok = false;
  std::string error;                  // when !ok: one line, naming the file at fault
  std::vector<std::string> warnings;  // one line each, naming the input (incomplete inputs)
  bool complete = false;              // every input was complete: meta complete = '1'
  std::size_t processes = 0;          // process rows in the output
};

// Merges `inputs`, in the order given, into a new trace at `output`.
MergeResult merge_traces(const std::vector<std::filesystem::path>& inputs,
                         const std::filesystem::path& output, const MergeOptions& options = {});

}  // namespace vramtrace::storage
