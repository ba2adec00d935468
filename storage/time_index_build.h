// How the time index's tables are made (storage/time_index.h says what each holds): in one pass
// over the trace, or from the tables a writer kept up as rows arrived (storage/live_span.h), with
// the rollups a BuildRollups makes from one ordered pass over the trace's events and
// time_problem counted in that pass. Where the index is kept and how it is read are
// storage/time_index.cpp's. Internal to storage/.
#pragma once

#include "storage/rollup_maker.h"
#include "storage/time_index_connection.h"

namespace vramtrace::storage {

// True when the index kept in the file is current and the trace has its allocation indexes
// (storage/schema.h): nothing to build in place.
bool time_index_complete_in_place(const TimeIndexConnection& connection);

// In the caller's transaction, on a connection to the trace itself: adds the allocation indexes
// the trace lacks (the index's queries walk them), then builds the index unless it is current.
void complete_time_index_in_place(const TimeIndexConnection& connection,
                                  const BuildRollups& build_rollups);

// Builds every table of the index under connection.index_schema, rollups included, reusing what
// the writer kept up through the trace's last allocation.
void build_time_index(const TimeIndexConnection& connection, const BuildRollups& build_rollups);

}  // namespace vramtrace::storage
