#include "physical_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace simcuda::driver {

PhysicalMemory::PhysicalMemory(std::size_t capacity)
    : chunk_count_((capacity + kChunk - 1) / kChunk) {}

PhysicalMemory::~PhysicalMemory() {
  if (fd_ >= 0) close(fd_);
}

std::optional<std::vector<std::size_t>> PhysicalMemory::allocate(std::size_t count) {
  if (count > chunk_count_ - used_ || !open_file()) return std::nullopt;
  std::vector<std::size_t> chunks;
  chunks.reserve(count);
  while (chunks.size() < count && !returned_.empty()) {
    chunks.push_back(*returned_.begin());
    returned_.erase(returned_.begin());
  }
  while (chunks.size() < count) chunks.push_back(never_used_++);
  used_ += count;
  return chunks;
}

void PhysicalMemory::release(const std::vector<std::size_t>& chunks) {
  for (const std::size_t chunk : chunks) {
    // The next owner of the chunk must not see these bytes, and the memory goes back to the
    // kernel, as freed device memory does (arena.h).
    fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(chunk * kChunk),
              static_cast<off_t>(kChunk));
    returned_.insert(chunk);
  }
  used_ -= chunks.size();
}

bool PhysicalMemory::map(void* address, const std::size_t* chunks, std::size_t count) const {
  auto* const start = static_cast<std::byte*>(address);
  std::size_t mapped = 0;
  // One mmap per run of consecutive chunks.
  while (mapped < count) {
    std::size_t run = 1;
    while (mapped + run < count && chunks[mapped + run] == chunks[mapped] + run) ++run;
    void* const at = start + mapped * kChunk;
    if (mmap(at, run * kChunk, PROT_NONE, MAP_SHARED | MAP_FIXED, fd_,
             static_cast<off_t>(chunks[mapped] * kChunk)) == MAP_FAILED) {
      // Put the reservation's placeholder back over what was mapped so far.
      if (mapped > 0) {
        mmap(start, mapped * kChunk, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
      }
      return false;
    }
    mapped += run;
  }
  return true;
}

int PhysicalMemory::duplicate_descriptor() const {
  return fd_ < 0 ? -1 : fcntl(fd_, F_DUPFD_CLOEXEC, 0);
}

bool PhysicalMemory::open_file() {
  if (fd_ >= 0) return true;
  if (open_failed_) return false;
  const int fd = memfd_create("simcuda-physical-memory", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(chunk_count_ * kChunk)) != 0) {
    std::fprintf(stderr,
                 "simcuda: cannot create the file that backs cuMemCreate's memory (%s); "
                 "cuMemCreate will fail with CUDA_ERROR_OUT_OF_MEMORY\n",
                 std::strerror(errno));
    if (fd >= 0) close(fd);
    open_failed_ = true;
    return false;
  }
  fd_ = fd;
  return true;
}

}  // namespace simcuda::driver
