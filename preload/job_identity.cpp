#include "job_identity.h"

#include <cerrno>
#include <cstdlib>

namespace vramtrace::preload {
namespace {

bool first_set(const char* const* names, int32_t* value) {
  for (; *names != nullptr; ++names) {
    const char* text = getenv(*names);
    if (text == nullptr || *text == '\0') continue;
    char* end = nullptr;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0 || v > INT32_MAX) continue;
    *value = static_cast<int32_t>(v);
    return true;
  }
  return false;
}

}  // namespace

void read_job_identity(ProcessStartInfo* info) {
  static const char* const kRank[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                      nullptr};
  static const char* const kLocalRank[] = {
      "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", nullptr};
  static const char* const kWorldSize[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE",
                                           "PMI_SIZE", nullptr};
  info->has_rank = first_set(kRank, &info->rank);
  info->has_local_rank = first_set(kLocalRank, &info->local_rank);
  info->has_world_size = first_set(kWorldSize, &info->world_size);
}

}  // namespace vramtrace::preload
