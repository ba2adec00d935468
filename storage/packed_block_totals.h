// The packed blocks' part of TraceReader::allocator_totals_at(): the caching allocator's totals
// that packed blocks carry (storage/allocation_chunk.h), beside those of the rows' details.
// Internal to storage/.
#pragma once

#include <cstdint>
#include <optional>

#include "storage/reader_connection.h"
#include "storage/trace_reader.h"

namespace vramtrace::storage {

// Reads the bins at and before `seq`'s, back to the first that holds a block event with totals,
// or to where `latest` (the rows' latest event with totals, at or before `seq`) is later than
// any of theirs, and puts the latest event's totals in *totals and its number in *latest. Only
// for a process that made blocks: every block PyTorch reports carries the totals, so the walk
// stops at once.
void packed_allocator_totals_at(ReaderConnection& trace, std::int64_t upid, std::uint64_t seq,
                                std::optional<std::uint64_t>* latest,
                                TraceReader::AllocatorTotalsAt* totals);

}  // namespace vramtrace::storage
