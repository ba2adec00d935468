// ModuleTracker: the objects each process loaded, where it mapped them, and the frames their
// addresses resolve to.
//
// A module is an object file (path and build id) or a Python source file, one row however
// many processes load it. A mapping places a module in one process's address space. A frame
// is a line of code: native frames by (module, address relative to its load bias), symbolized
// once (several per address where calls were inlined), and Python frames by (file, function,
// line) of the code objects the shim announced.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/ingest_stats.h"
#include "collector/symbolizer.h"
#include "storage/trace_rows.h"
#include "vramtrace.pb.h"

namespace vramtrace::storage {
class TraceWriter;
}

namespace vramtrace::collector {

class ModuleTracker {
 public:
  // What one process has mapped, dropped with its ring.
  struct ProcessModules {
    struct Mapping {
      uint64_t start, end, load_bias;
      int64_t module_id;
    };
    // A Python code object as PythonCode announced it, with the module row of its file.
    struct PythonCode {
      int64_t module_id;
      std::string name;
      std::string filename;
    };
    std::vector<Mapping> mappings;  // sorted by start, none overlapping
    // An address inside the interpreter's object, once the shim has found one
    // (python_splice.h), and the code objects it announced, by their wire id.
    std::optional<uint64_t> python_interpreter_address;
    std::unordered_map<uint64_t, PythonCode> python_codes;
  };

  // Writes module 0, which stands for addresses outside every module a process reported.
  ModuleTracker(storage::TraceWriter& writer, IngestStats& stats);

  // A Module record of process `upid`. False, counted, when it is not a valid one.
  bool on_module(ProcessModules& p, int64_t upid, const wire::Module& m);
  void on_python_code(ProcessModules& p, const wire::PythonCode& m);

  // The frames of the code at `pc`, innermost first (more than one with inlining).
  const std::vector<int64_t>& frames_for_pc(const ProcessModules& p, uint64_t pc);
  // The frame of line `line` of the code object the process announced as `code`.
  int64_t python_frame_id(const ProcessModules& p, uint64_t code, uint32_t line);
  // Whether `pc` is in the object that holds the Python interpreter.
  static bool in_interpreter(const ProcessModules& p, uint64_t pc);

  // A frame as a report shows it, from what is in memory; nullopt for an id never made.
  std::optional<storage::StackFrame> stack_frame(int64_t frame_id) const;

  const Symbolizer::Stats& symbolizer_stats() const { return symbolizer_.stats(); }

 private:
  struct Module {
    int64_t id;
    std::string path;
    std::string build_id;  // raw bytes
  };
  struct PcKey {
    int64_t module_id;
    uint64_t rel_pc;
    friend bool operator==(const PcKey&, const PcKey&) = default;
  };
  struct PcKeyHash {
    size_t operator()(const PcKey& k) const;
  };

  int64_t module_id_for(const std::string& path, const std::string& build_id);
  // Writes a frame row and keeps what a report shows of it.
  void add_frame(const storage::FrameRow& row);

  storage::TraceWriter& writer_;
  IngestStats& stats_;
  Symbolizer symbolizer_;
  int64_t next_mapping_id_ = 1;
  int64_t next_frame_id_ = 1;
  std::unordered_map<std::string, int64_t> module_ids_;  // path + '\0' + build-id -> id
  std::vector<Module> modules_;                          // by id - 1
  std::unordered_map<PcKey, std::vector<int64_t>, PcKeyHash> frames_by_pc_;
  // Python frames: (module id of the file, '\0', function, '\0', line) -> frame id.
  std::unordered_map<std::string, int64_t> python_frames_;
  std::vector<storage::FrameRow> frame_rows_;  // by id - 1
};

}  // namespace vramtrace::collector
