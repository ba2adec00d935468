// LiveAllocations: what one process holds right now, to match each free to what it ends.
//
// Addresses are only unique within the space their kind lives in: a VMM mapping starts at
// the same address as the reservation holding it, and a physical handle is an opaque integer
// that may equal any pointer. So each space is kept apart, and a free finds its space from
// the API that made it (cuMemRelease ends handles, cuMemAddressFree reservations, cuMemUnmap
// mappings, every other free ordinary pointers). cuMemUnmap ends a range: every mapping that
// starts inside it.
//
// A caching allocator's blocks (KIND_BLOCK) are a space of their own too: the first block of a
// segment starts at the segment's address. Only the allocator's reports end them. Each block is
// tied to the live segment that holds it: segment_containing() looks among the live device
// allocations (cudaMalloc, cuMemAlloc, managed, async) and VMM mappings, kept by address.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "collector/address_table.h"

namespace vramtrace::collector {

class LiveAllocations {
 public:
  struct Entry {
    int64_t id = 0;  // the allocation's row id
    int kind = 0;    // wire::Kind
    uint64_t size = 0;
  };

  // Adds a live allocation. Returns the entry it displaced, when the address was still live
  // (its free was not seen): the caller counts that.
  std::optional<Entry> add(uint64_t address, Entry entry);

  using Ended = std::vector<std::pair<uint64_t, Entry>>;
  // Removes what a free made by `api` at `address` ends, and appends it to `*ended` (a vector
  // the caller reuses: no allocation per free); `size` matters only for cuMemUnmap. Nothing
  // appended: the free matches nothing live.
  void remove_for_free(int api, uint64_t address, uint64_t size, Ended* ended);

  // Puts back what remove_for_free() returned, when the free failed after all.
  void restore(uint64_t address, Entry entry);

  void clear();

  // The live segment holding [address, address + size): a device allocation that contains the
  // whole range, or a VMM mapping that contains its start (with expandable segments a block
  // may run on into the next mapping of the same reservation). Empty: none.
  // The index of segments by address is built on the first call: only processes with
  // allocator events (PyTorch) need it, and keeping it for every allocation of every other
  // process would cost an ordered-map insert per event.
  std::optional<Entry> segment_containing(uint64_t address, uint64_t size);

 private:
  enum Space { kPointers, kHandles, kReservations, kBlocks, kSpaceCount };
  static bool is_segment_kind(int kind);
  static std::optional<Entry> containing(const std::map<uint64_t, Entry>& by_start,
                                         uint64_t address);
  static Space space_of_kind(int kind);
  static std::optional<Space> space_of_free(int api);  // nullopt: cuMemUnmap

  AddressTable<Entry> by_address_[kSpaceCount];
  std::map<uint64_t, Entry> mappings_;  // ordered: cuMemUnmap ends a range
  std::map<uint64_t, Entry> segments_;  // live pointer allocations that can hold blocks
  bool segments_indexed_ = false;       // segments_ is kept up to date from now on
};

}  // namespace vramtrace::collector
