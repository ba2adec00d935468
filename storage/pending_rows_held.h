// Which pending allocation rows a batch or a commit writes, when short lives are packed: up to
// the first that is still live and was made in its process's last kShortLifeEvents numbers,
// so that a short life is not cut into a row by the write, and the bin it is in stays a repeat
// of the bins before it (storage/repeat_folder.h). The rows from there on wait for the next
// batch. Internal to the writer (storage/trace_file_writer.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "storage/pending_allocation_table.h"

namespace vramtrace::storage {

// How many of `pending` (ascending ids) to write now. Rows with ids up to `held_before` were
// held back by the last commit: they are written now, so that a program that made no event
// since (one that waits) does not keep its last allocations from the readers. A block waits
// with the segment it names (the packer keeps a segment a block of its batch names out of the
// chunks). All of them when more than `most_held` would wait.
std::size_t pending_rows_to_write(const std::vector<PendingAllocation>& pending,
                                  std::int64_t held_before, std::size_t most_held);

}  // namespace vramtrace::storage
