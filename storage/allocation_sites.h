// The allocation_site and free_site rows of a trace being written (docs/schema.md): what an
// allocation shares with the others made by the same call from the same place (its thread,
// stack, kind, API, device, stream, flags, pool and result), and what a free shares with the
// others of its thread, stack and API, each written once and found again by what it holds.
#pragma once

#include <memory>

#include "storage/trace_rows.h"
#include "storage/write_failure.h"

namespace vramtrace::storage {

class AllocationSites {
 public:
  // Prepares its statements in `failure.db`; null, with *error set, when SQLite refuses one.
  static std::unique_ptr<AllocationSites> create(WriteFailure& failure, std::string* error);
  ~AllocationSites();
  AllocationSites(const AllocationSites&) = delete;
  AllocationSites& operator=(const AllocationSites&) = delete;

  // The id of the row's allocation_site, written first when it is new.
  std::int64_t site_id(const AllocationRow& row);
  // The id of the free's free_site, written first when it is new.
  std::int64_t free_site_id(const FreeRow& row);

 private:
  struct State;
  explicit AllocationSites(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace vramtrace::storage
