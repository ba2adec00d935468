// The physical memory of one device that cuMemCreate hands out.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <vector>

namespace simcuda::driver {

// Chunks of one memfd: a handle's memory is a list of chunks, mapped (mmap MAP_SHARED) at
// whatever reserved addresses cuMemMap names. So, as with GPU physical memory, a handle can be
// mapped at several addresses at once, all of which see the same bytes, and it keeps its
// contents while unmapped. The file is sparse and created at the first cuMemCreate of the
// device, so it costs nothing until used; released chunks are punched out of it.
//
// Capacity is the driver's business (a device's heap and its physical memory share it); this
// class only hands out chunks. Not thread-safe: the driver serialises all calls.
class PhysicalMemory {
 public:
  // The size of a chunk, and the allocation granularity of the virtual memory API.
  static constexpr std::size_t kChunk = std::size_t{2} << 20;

  // Room for `capacity` bytes, rounded up to whole chunks.
  explicit PhysicalMemory(std::size_t capacity);
  ~PhysicalMemory();
  PhysicalMemory(const PhysicalMemory&) = delete;
  PhysicalMemory& operator=(const PhysicalMemory&) = delete;

  // `count` chunks (their indices), or nullopt when fewer are free or the file could not be
  // created (then the reason was printed on stderr, once).
  std::optional<std::vector<std::size_t>> allocate(std::size_t count);
  // Gives chunks back; their contents are discarded.
  void release(const std::vector<std::size_t>& chunks);
  std::size_t used_bytes() const { return used_ * kChunk; }

  // Maps `count` chunks starting at `chunks` at `address` (chunk-aligned, inside a reservation),
  // inaccessible until protected otherwise; false if mmap failed (nothing is left mapped).
  bool map(void* address, const std::size_t* chunks, std::size_t count) const;

  // A new descriptor (close-on-exec) of the memory file, for cuMemExportToShareableHandle; -1
  // if there is no file yet or dup failed. Chunk n lies at offset n * kChunk.
  int duplicate_descriptor() const;

 private:
  bool open_file();

  std::size_t chunk_count_;
  int fd_ = -1;
  bool open_failed_ = false;
  std::size_t used_ = 0;
  std::size_t never_used_ = 0;      // chunks [never_used_, chunk_count_) were never handed out
  std::set<std::size_t> returned_;  // chunks released since, handed out again lowest first
};

}  // namespace simcuda::driver
