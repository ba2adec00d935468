// The process's place in a distributed job, read from the launcher's environment, so that a
// trace of many ranks can be filtered and merged by rank.
#pragma once

#include "wire_encoder.h"

namespace vramtrace::preload {

// Fills info's rank, local_rank and world_size (and their has_ flags) from the first variable
// set of each family: torchrun's (RANK, LOCAL_RANK, WORLD_SIZE), Slurm's, Open MPI's, then
// PMI's (MPICH, Intel MPI). A value that is not a non-negative integer counts as unset.
void read_job_identity(ProcessStartInfo* info);

}  // namespace vramtrace::preload
