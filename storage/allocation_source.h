// The trace's allocations as TraceReader gives them, from both places a trace keeps them: rows
// of allocation_compact (read through SQL, without the view `allocation`) and the packed
// allocations of allocation_chunk (storage/packed_allocations.h), merged into one order. What
// an AllocationFilter keeps is decided here once, in the two forms the two places need: SQL for
// the rows, a test in C++ for a packed allocation. Internal to storage/.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "storage/allocation_filter.h"
#include "storage/reader_connection.h"
#include "storage/trace_rows.h"

namespace vramtrace::storage {

// Where each process's program ended before the process did (TraceReader::program_end_seq).
using ProgramEnds = std::map<std::int64_t, std::uint64_t>;

// "Live at the program's end" for a successful allocation of `upid`: never freed, or, in a
// process whose program ended before it did, allocated before that end and freed after it.
// The filter's SQL says the same.
bool live_at_program_end_of(const ProgramEnds& ends, std::int64_t upid, std::uint64_t alloc_seq,
                            std::optional<std::uint64_t> free_seq);

// The trace's allocation rows alone, as a subquery: for a query that no packed allocation can
// answer, since none has details or is a block (storage/allocation_chunk.h).
const std::string& allocation_rows_subquery();

class AllocationSource {
 public:
  AllocationSource(ReaderConnection& trace, const ProgramEnds& program_ends)
      : trace_(trace), program_ends_(program_ends) {}

  // TraceReader::for_each_allocation: in (upid, alloc_seq, id) order, by id with filter.ids,
  // or with the packed allocations after the rows with filter.in_table_order.
  void for_each(const AllocationFilter& filter,
                const std::function<void(const AllocationRecord&)>& visit);
  // TraceReader::for_each_allocation_event.
  void for_each_event(const std::function<void(const AllocationEvent&)>& visit,
                      std::optional<std::int64_t> upid);
  // TraceReader::allocation_totals.
  std::vector<AllocationTotalsRow> totals();

 private:
  // Each row of `rows` (a query selecting allocation_columns(columns)), checked against the
  // schema and decoded.
  void visit_rows(sqlite::Statement& rows, AllocationColumns columns,
                  const std::function<void(const AllocationRecord&)>& visit);

  ReaderConnection& trace_;
  const ProgramEnds& program_ends_;
};

}  // namespace vramtrace::storage
