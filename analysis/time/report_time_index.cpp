#include "analysis/time/report_time_index.h"

#include <algorithm>
#include <optional>

#include <string>

namespace vramtrace::analysis {

std::unique_ptr<storage::TimeIndex> open_time_index(const storage::TraceReader& trace) {
  // The index may be written into the file that `trace` has open read-only: only new tables
  // are written, and the pages of the tables the reader reads do not change.
  std::string error;
  auto index = storage::TimeIndex::open(trace.path(), &error);
  if (!index) throw storage::TraceError(error);
  return index;
}

std::unique_ptr<storage::TimeIndex> open_time_index_if_kept(const storage::TraceReader& trace) {
  if (!storage::TimeIndex::kept_in_file(trace.path())) return nullptr;
  return open_time_index(trace);
}

std::int64_t time_origin_ns(const storage::TraceReader& trace) {
  if (const std::unique_ptr<storage::TimeIndex> index = open_time_index_if_kept(trace))
    return index->start_ns();
  std::optional<std::int64_t> first;
  for (const storage::AllocationTotalsRow& row : trace.allocation_totals())
    first = first ? std::min(*first, row.first_alloc_ns) : row.first_alloc_ns;
  return first.value_or(0);
}

}  // namespace vramtrace::analysis
