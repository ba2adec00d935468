#include "storage/allocation_chunk.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

#include "storage/live_span.h"
#include "storage/schema.h"

namespace vramtrace::storage {
namespace {

// Differences and values stored as the int64 with the same bits, as everywhere in the trace.
std::int64_t bits(std::uint64_t value) {
  return static_cast<std::int64_t>(value);
}
std::int64_t difference(std::int64_t a, std::int64_t b) {
  return bits(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
std::int64_t sum(std::int64_t a, std::int64_t b) {
  return bits(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

// The most characters one allocation takes: ten int64s of at most 20 characters, their nine
// commas, two brackets and the comma before the next.
// One field's digits at `out`; returns their end. Most fields of a storm's allocations are
// below 100 (their differences, sites, the free's distance), written without to_chars' count.
char* write_number(char* out, std::int64_t value) {
  if (value >= 0 && value < 10) {
    *out++ = static_cast<char>('0' + value);
    return out;
  }
  if (value >= 10 && value < 100) {
    *out++ = static_cast<char>('0' + value / 10);
    *out++ = static_cast<char>('0' + value % 10);
    return out;
  }
  return std::to_chars(out, out + 20, value).ptr;
}

constexpr std::size_t kMaxPackedChars = kPackedBlockFields * 20 + (kPackedBlockFields - 1) + 3;

// A detail's digits at `out`, or null; returns their end.
char* write_optional(char* out, std::optional<std::int64_t> value) {
  if (value) return write_number(out, *value);
  std::memcpy(out, "null", 4);
  return out + 4;
}
std::optional<std::int64_t> as_bits(std::optional<std::uint64_t> value) {
  if (!value) return std::nullopt;
  return bits(*value);
}

// An integer as pack_allocations() writes it: an optional minus and 1 to 19 decimal digits, in
// range. std::from_chars did the same at about a third of a report's time on a packed trace.
bool take_number(const char*& at, const char* end, std::int64_t* value) {
  const bool negative = at != end && *at == '-';
  const char* p = at + (negative ? 1 : 0);
  const char* const digits = p;
  std::uint64_t magnitude = 0;
  while (p != end && static_cast<unsigned char>(*p - '0') < 10) {
    if (p - digits == 19) return false;  // 20 digits: out of range
    magnitude = magnitude * 10 + static_cast<std::uint64_t>(*p - '0');
    ++p;
  }
  const std::uint64_t limit =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + (negative ? 1 : 0);
  if (p == digits || magnitude > limit) return false;
  *value =
      negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
  at = p;
  return true;
}

}  // namespace

std::uint64_t first_packed_alloc_live_at(std::uint64_t seq) {
  const auto life = static_cast<std::uint64_t>(kShortLifeEvents);
  return level_0_bin_first(seq > life ? seq - life : 0);
}

AllocationChunk pack_allocations(std::int64_t upid,
                                 const std::vector<PackedAllocation>& allocations) {
  AllocationChunk chunk;
  chunk.upid = upid;
  const PackedAllocation& first = allocations.front();
  chunk.first_alloc_seq = first.alloc_seq;
  chunk.first_id = first.id;
  chunk.first_alloc_ns = first.alloc_ns;
  chunk.last_id = first.id;
  chunk.count = static_cast<std::int64_t>(allocations.size());
  // Written into room for the longest text, then copied: a string's checked appends, character
  // by character, cost as much as the numbers themselves. The room is the thread's, kept.
  thread_local std::vector<char> room;
  room.resize(std::max(room.size(), 2 + allocations.size() * kMaxPackedChars));
  char* out = room.data();
  *out++ = '[';
  // The last address written and where its digits are.
  std::uint64_t last_address = 0;
  const char* out_of_last_address = nullptr;
  std::size_t last_address_chars = 0;
  constexpr int kAddressField = 2;
  for (const PackedAllocation& a : allocations) {
    chunk.last_seq = std::max(chunk.last_seq, a.free_seq());
    chunk.last_id = std::max(chunk.last_id, a.id);
    if (&a != &first) *out++ = ',';
    const std::array<std::int64_t, kPackedFields> fields{difference(a.id, first.id),
                                                         a.site_id,
                                                         bits(a.address),
                                                         bits(a.size),
                                                         a.size_minus_requested,
                                                         bits(a.alloc_seq - first.alloc_seq),
                                                         difference(a.alloc_ns, first.alloc_ns),
                                                         a.free_site_id,
                                                         a.free_seq_delta,
                                                         a.free_ns_delta};
    *out++ = '[';
    for (int i = 0; i < kPackedFields; ++i) {
      if (i != 0) *out++ = ',';
      if (i == kAddressField && a.address == last_address && last_address_chars != 0) {
        // An allocator hands one address out again and again: its digits are copied.
        std::memcpy(out, out_of_last_address, last_address_chars);
        out += last_address_chars;
        continue;
      }
      char* const start = out;
      out = write_number(out, fields[i]);
      if (i == kAddressField) {
        last_address = a.address;
        out_of_last_address = start;
        last_address_chars = static_cast<std::size_t>(out - start);
      }
    }
    if (a.has_block_detail()) {
      for (const std::optional<std::int64_t> detail :
           {a.segment_id, as_bits(a.allocator_allocated), as_bits(a.allocator_reserved),
            as_bits(a.free_allocator_allocated), as_bits(a.free_allocator_reserved)}) {
        *out++ = ',';
        out = write_optional(out, detail);
      }
    }
    *out++ = ']';
  }
  *out++ = ']';
  chunk.allocations.assign(room.data(), out);
  return chunk;
}

bool unpack_allocations(std::string_view text, std::int64_t first_id, std::uint64_t first_alloc_seq,
                        std::int64_t first_alloc_ns, std::vector<PackedAllocation>* out) {
  const char* at = text.data();
  const char* const end = text.data() + text.size();
  const auto take = [&](char c) {
    if (at == end || *at != c) return false;
    ++at;
    return true;
  };
  if (!take('[')) return false;
  if (take(']')) return at == end;
  do {
    std::array<std::int64_t, kPackedFields> fields;
    if (!take('[')) return false;
    for (int i = 0; i < kPackedFields; ++i) {
      if (i != 0 && !take(',')) return false;
      if (!take_number(at, end, &fields[i])) return false;
    }
    // A block's details, each a number or null.
    std::array<std::optional<std::int64_t>, kPackedBlockFields - kPackedFields> details;
    const bool has_details = at != end && *at == ',';
    for (std::size_t i = 0; has_details && i < details.size(); ++i) {
      if (!take(',')) return false;
      if (end - at >= 4 && std::string_view(at, 4) == "null") {
        at += 4;
        continue;
      }
      std::int64_t value = 0;
      if (!take_number(at, end, &value)) return false;
      details[i] = value;
    }
    // A negative size is no allocation's: a chunk written by hand, refused as one that does not
    // parse.
    if (!take(']') || fields[3] < 0) return false;
    PackedAllocation& a = out->emplace_back();
    const auto as_unsigned = [](std::optional<std::int64_t> value) -> std::optional<std::uint64_t> {
      if (!value) return std::nullopt;
      return static_cast<std::uint64_t>(*value);
    };
    a.segment_id = details[0];
    a.allocator_allocated = as_unsigned(details[1]);
    a.allocator_reserved = as_unsigned(details[2]);
    a.free_allocator_allocated = as_unsigned(details[3]);
    a.free_allocator_reserved = as_unsigned(details[4]);
    a.id = sum(first_id, fields[0]);
    a.site_id = fields[1];
    a.address = static_cast<std::uint64_t>(fields[2]);
    a.size = static_cast<std::uint64_t>(fields[3]);
    a.size_minus_requested = fields[4];
    a.alloc_seq = first_alloc_seq + static_cast<std::uint64_t>(fields[5]);
    a.alloc_ns = sum(first_alloc_ns, fields[6]);
    a.free_site_id = fields[7];
    a.free_seq_delta = fields[8];
    a.free_ns_delta = fields[9];
  } while (take(','));
  return take(']') && at == end;
}

}  // namespace vramtrace::storage
