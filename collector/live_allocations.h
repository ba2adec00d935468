// LiveAllocations: what one process holds right now, to match each free to what it ends.
//
// Addresses are only unique within the space their kind lives in: a VMM mapping starts at
// the same address as the reservation holding it, and a physical handle is an opaque integer
// that may equal any pointer. So each space is kept apart, and a free finds its space from
// the API that made it (cuMemRelease ends handles, cuMemAddressFree reservations, cuMemUnmap
// mappings, every other free ordinary pointers). cuMemUnmap ends a range: every mapping that
// starts inside it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vramtrace::collector {

class LiveAllocations {
 public:
  struct Entry {
    int64_t id;  // the allocation's row id
    int kind;    // wire::Kind
  };

  // Adds a live allocation. Returns the entry it displaced, when the address was still live
  // (its free was not seen): the caller counts that.
  std::optional<Entry> add(uint64_t address, Entry entry);

  // Removes and returns what a free made by `api` at `address` ends; `size` matters only for
  // cuMemUnmap. Empty: the free matches nothing live.
  std::vector<std::pair<uint64_t, Entry>> remove_for_free(int api, uint64_t address, uint64_t size);

  // Puts back what remove_for_free() returned, when the free failed after all.
  void restore(uint64_t address, Entry entry);

  void clear();

 private:
  enum Space { kPointers, kHandles, kReservations, kSpaceCount };
  static Space space_of_kind(int kind);
  static std::optional<Space> space_of_free(int api);  // nullopt: cuMemUnmap

  std::unordered_map<uint64_t, Entry> by_address_[kSpaceCount];
  std::map<uint64_t, Entry> mappings_;  // ordered: cuMemUnmap ends a range
};

}  // namespace vramtrace::collector
