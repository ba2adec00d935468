// AddressTable: a hash map from 64-bit addresses to small values, in one flat array.
//
// The collector adds one live allocation and removes one for every allocation and free it
// ingests; std::unordered_map allocated and freed a node for each (perf put that, with the
// map's insert and erase, at about 8% of the collector's samples; replacing it measured 1-3%
// faster, inside the noise, and no event allocates now). This keeps the entries in the array
// itself (open addressing, linear probing; a removal shifts the entries after it back, so there
// are no tombstones and a lookup stops at the first empty slot). It grows at 7/8 full and never
// shrinks while in use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vramtrace::collector {

template <class Value>
class AddressTable {
 public:
  // The value at `address`, or null.
  Value* find(uint64_t address) {
    if (slots_.empty()) return nullptr;
    for (size_t i = home(address);; i = next(i)) {
      Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.address == address) return &s.value;
    }
  }

  // Puts `value` at `address`. Returns true if the address was new; false if it replaced a
  // value, which `*replaced` then holds.
  bool insert_or_replace(uint64_t address, const Value& value, Value* replaced) {
    if ((size_ + 1) * 8 > slots_.size() * 7) grow();
    for (size_t i = home(address);; i = next(i)) {
      Slot& s = slots_[i];
      if (!s.used) {
        // Field by field: a Slot built aside and copied in stalls on store forwarding.
        s.address = address;
        s.value = value;
        s.used = true;
        ++size_;
        return true;
      }
      if (s.address == address) {
        *replaced = s.value;
        s.value = value;
        return false;
      }
    }
  }

  // Removes the entry at `address`, if any, into `*removed`.
  bool erase(uint64_t address, Value* removed) {
    if (slots_.empty()) return false;
    size_t hole = home(address);
    for (;; hole = next(hole)) {
      if (!slots_[hole].used) return false;
      if (slots_[hole].address == address) break;
    }
    *removed = slots_[hole].value;
    // Backward shift: move up each later entry of the run that may sit in the hole (its home
    // is not cyclically in (hole, j]), so every entry stays reachable from its home.
    for (size_t j = next(hole);; j = next(j)) {
      Slot& s = slots_[j];
      if (!s.used) break;
      const size_t h = home(s.address);
      const bool between = hole < j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (between) continue;
      slots_[hole] = s;
      hole = j;
    }
    slots_[hole].used = false;
    --size_;
    return true;
  }

  void clear() {
    slots_.clear();
    size_ = 0;
  }
  size_t size() const { return size_; }

  // Calls fn(address, value) for each entry, in no particular order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const Slot& s : slots_)
      if (s.used) fn(s.address, s.value);
  }

 private:
  struct Slot {
    uint64_t address = 0;
    Value value{};
    bool used = false;
  };

  size_t home(uint64_t address) const {
    // Allocation addresses share their low bits (alignment) and often their high bits: mix
    // them all (the 64-bit finalizer of MurmurHash3, its first two rounds).
    uint64_t x = address ^ (address >> 33);
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return static_cast<size_t>(x) & (slots_.size() - 1);
  }
  size_t next(size_t i) const { return (i + 1) & (slots_.size() - 1); }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    size_ = 0;
    Value ignored;
    for (const Slot& s : old)
      if (s.used) insert_or_replace(s.address, s.value, &ignored);
  }

  std::vector<Slot> slots_;  // a power of two long, or empty
  size_t size_ = 0;
};

}  // namespace vramtrace::collector
