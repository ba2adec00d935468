// The rows of a trace, as the writer takes them and the reader gives them back. Columns and
// units are documented in docs/schema.md; the comments here say only what the types cannot.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vramtrace::storage {

// The start of a process, as its ring's first message tells it.
struct ProcessRow {
  std::int64_t upid = 0;
  std::uint32_t pid = 0, ppid = 0, uid = 0;
  std::string host, exe;
  std::vector<std::string> argv;
  std::int64_t start_ns = 0, start_realtime_ns = 0;
  std::string unwinder;
  // Its place in a distributed job, from the launcher's environment; unset: not in one.
  std::optional<int> rank, local_rank, world_size;
  std::string backend = "preload";  // kBackendPreload or kBackendCupti
};

inline constexpr std::string_view kBackendPreload = "preload";
inline constexpr std::string_view kBackendCupti = "cupti";

// The end of a process. Unset fields stay NULL in the trace.
struct ProcessEndRow {
  std::int64_t upid = 0;
  std::optional<std::int64_t> end_ns;
  std::optional<int> exit_status, signal;
  bool complete = false;  // it said goodbye, or its ring was drained to the last byte
};

// What a frame is a line of. Stored as the text of frame_language_name().
enum class FrameLanguage { kNative, kPython };
std::string_view frame_language_name(FrameLanguage language);   // "native", "python"
FrameLanguage frame_language_from_name(std::string_view name);  // anything else: kNative

struct FrameRow {
  std::int64_t id = 0, module_id = 0;
  std::uint64_t rel_pc = 0;
  std::optional<std::string> function, file;
  std::optional<int> line;
  bool inlined = false;  // an inlined call inside the next outer frame
  FrameLanguage language = FrameLanguage::kNative;
};

struct AllocationRow {
  std::int64_t id = 0, upid = 0;
  int kind = 0, api = 0, device = 0;
  std::uint64_t stream = 0, address = 0, size = 0, requested_size = 0;
  std::uint32_t flags = 0;
  std::optional<std::uint64_t> pool;
  int result = 0;  // cudaError_t; non-zero: the allocation failed and is never freed
  std::uint64_t alloc_seq = 0;
  std::int64_t alloc_ns = 0, alloc_utid = 0;
  std::optional<std::int64_t> alloc_callsite_id;
  // vmm_mapping only: the handle mapped at `address`, and where in it the mapping starts.
  std::optional<std::uint64_t> vmm_handle, vmm_offset;
  // block only: the segment allocation that held it (unset: none found), and the allocator's
  // allocated and reserved totals after the block was made (or, failed, at the OOM).
  std::optional<std::int64_t> segment_id;
  std::optional<std::uint64_t> allocator_allocated, allocator_reserved;
  std::optional<std::uint32_t> correlation_id;  // CUPTI's; unset from the shim
};

// The device's memory as the driver gave it (cuMemGetInfo).
struct DeviceMemoryRow {
  std::uint64_t free = 0, total = 0;
};

struct FreeRow {
  std::uint64_t free_seq = 0;
  std::int64_t free_ns = 0, free_utid = 0;
  std::optional<std::int64_t> free_callsite_id;
  int free_api = 0;
  // block only: the allocator's totals after the free.
  std::optional<std::uint64_t> allocator_allocated, allocator_reserved;
};

struct BadFreeRow {
  std::int64_t id = 0, upid = 0;
  std::uint64_t seq = 0;
  std::int64_t ns = 0, utid = 0;
  int api = 0;
  std::uint64_t address = 0;
  int result = 0;
  std::optional<std::int64_t> callsite_id;
  std::string reason;  // kBadFreeUnknownAddress or kBadFreeCallFailed
};

inline constexpr std::string_view kBadFreeUnknownAddress = "unknown_address";
inline constexpr std::string_view kBadFreeCallFailed = "call_failed";

// A point (mark) or a span (range) on a process's timeline, from NVTX or the vramtrace_ API.
struct MarkerRow {
  std::int64_t id = 0, upid = 0;
  std::int64_t utid = 0;              // the thread that began it
  std::string type;                   // kMarkerMark or kMarkerRange
  std::string source;                 // kMarkerFromNvtx, kMarkerFromApi or kMarkerFromShim
  std::optional<std::string> domain;  // unset: NVTX's default domain
  std::string name;
  std::uint64_t start_seq = 0;  // in the process's sequence, as allocations' alloc_seq
  std::int64_t start_ns = 0;
  // Push/pop ranges nest per thread: depth 0 is outermost, parent_id the enclosing range.
  // Marks and start/end ranges have depth 0 and no parent.
  int depth = 0;
  std::optional<std::int64_t> parent_id;
  std::optional<std::uint32_t> color, category;  // color: ARGB
};

// The end of a range. end_utid may differ from the start's thread (nvtxRangeStart/End).
struct MarkerEndRow {
  std::uint64_t end_seq = 0;
  std::int64_t end_ns = 0, end_utid = 0;
};

inline constexpr std::string_view kMarkerMark = "mark";
inline constexpr std::string_view kMarkerRange = "range";
inline constexpr std::string_view kMarkerFromNvtx = "nvtx";
inline constexpr std::string_view kMarkerFromApi = "api";
// The shim's own markers (proto/shim_markers.h): what it saw of the program itself.
inline constexpr std::string_view kMarkerFromShim = "shim";

// A CUPTI activity record about memory (the memory_activity table).
struct MemoryActivityRow {
  std::int64_t id = 0, upid = 0;
  std::string operation;  // "allocation", "release", "pool_created", "pool_destroyed", ...
  int kind = 0, device = 0;
  std::uint32_t correlation_id = 0, stream = 0;
  std::uint64_t address = 0, size = 0, cupti_ns = 0;
  std::optional<std::uint64_t> pool_address, release_threshold, utilized_size, min_bytes_to_keep;
  std::optional<std::string> source;
  std::optional<std::int64_t> allocation_id;  // the callback's allocation of the same call
};

// How much a named import problem matters, as perfetto's stats grade them.
enum class Severity { kInfo, kDataLoss, kError };

// "info", "data_loss", "error": the strings stored in stats.severity.
std::string_view severity_name(Severity severity);
std::optional<Severity> parse_severity(std::string_view name);

// ---- What the reader gives back ----

struct ProcessRecord {
  ProcessRow start;
  ProcessEndRow end;  // end.complete is false and the optionals empty until the process ended
};

struct ThreadRecord {
  std::int64_t utid = 0, upid = 0;
  std::uint32_t tid = 0;
  std::optional<std::string> name;
};

struct AllocationRecord {
  AllocationRow allocation;
  std::optional<FreeRow> free;  // empty: never freed

  bool failed() const { return allocation.result != 0; }
  // Succeeded and never freed: still held when the trace ends. The reports' "live at the end"
  // is TraceReader::live_at_program_end(), which also counts what a Python interpreter's
  // teardown freed.
  bool live_at_end() const { return !failed() && !free.has_value(); }
};

// The allocations of one (process, device, kind, result), added up by SQLite in one pass:
// what a summary needs without reading every row into memory.
struct AllocationTotalsRow {
  std::int64_t upid = 0;
  int device = 0, kind = 0, result = 0;
  std::uint64_t count = 0, bytes = 0;              // allocations, and their size
  std::uint64_t freed_count = 0, freed_bytes = 0;  // of those, the freed ones
  // Of those, the ones live at the program's end (TraceReader::live_at_program_end): the
  // unfreed ones, and in a Python process also what its interpreter's teardown freed.
  std::uint64_t live_count = 0, live_bytes = 0;
  std::int64_t first_alloc_ns = 0, last_alloc_ns = 0;
  std::optional<std::int64_t> last_free_ns;  // empty: none freed
};

struct MarkerRecord {
  MarkerRow start;
  std::optional<MarkerEndRow> end;  // empty: a mark, or a range that never ended
};

// Which columns of an allocation a query reads (TraceReader::for_each_allocation,
// TimeIndex::for_each_live_at). A record's fields that were not read are left at their
// defaults and must not be read: SQLite decodes each column it is asked for, and on millions of
// rows the columns not needed are most of a report's time.
enum class AllocationColumns {
  kAll,
  // What the allocator's totals need: id, upid, kind, size, result, alloc_seq, free_seq,
  // segment_id and the allocator's reported totals, alloc and free.
  kAllocatorTotals,
  // What adding up a live set by stack needs: id, upid, kind, device, size, alloc_seq,
  // alloc_callsite_id, and of the free only free_seq. For live allocations only: result (0
  // for every one) is not read.
  kLiveByStack,
  // The same and segment_id: by stack, and by the segment that holds each block (the
  // allocator's cache).
  kLiveByStackAndSegment,
};

// An allocation starting or ending, in a process's sequence order.
struct AllocationEvent {
  enum class Type { kAlloc, kFree };
  Type type = Type::kAlloc;
  std::int64_t allocation_id = 0, upid = 0;
  std::uint64_t seq = 0;
  std::int64_t ns = 0;
  int device = 0, kind = 0;
  std::uint64_t size = 0;
  // The allocation's alloc_callsite_id, where the reader selects it (the time index's build and
  // a writer keeping the rollups up): what was live at each peak is added up by it.
  std::optional<std::int64_t> callsite_id;
};

// Why a stack read from a trace stops before its outermost frame: its callsites' parents lead
// back to one of them (a damaged or hostile trace), or the chain is deeper than any stack the
// shim records (TraceReader::kMaxStackDepth).
enum class StackCut { kNone, kCycle, kTooDeep };

// The last part of a frame's module or source file path (all of it without a '/'), as reports
// name them.
inline std::string_view path_base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// One frame of a resolved stack.
struct StackFrame {
  std::int64_t callsite_id = 0, frame_id = 0;
  std::optional<std::string> function, file;
  std::optional<int> line;
  std::string module;  // the module's path
  std::uint64_t rel_pc = 0;
  bool inlined = false;
  FrameLanguage language = FrameLanguage::kNative;
  // Not kNone: no frame but the mark of a stack cut there, its outermost entry, with the reason
  // in `function` ("[stack cut: ...]") and no callsite, frame, file or module.
  StackCut cut = StackCut::kNone;
};

struct StatRecord {
  std::string name;
  Severity severity = Severity::kInfo;
  std::int64_t value = 0;
  std::string description;
};

}  // namespace vramtrace::storage
