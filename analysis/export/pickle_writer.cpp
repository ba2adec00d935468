#include "analysis/export/pickle_writer.h"

#include <array>
#include <bit>
#include <limits>
#include <stdexcept>

#include "storage/printable.h"

namespace vramtrace::analysis {
namespace {

// Python's Lib/pickle.py names.
constexpr char kProto = '\x80';
constexpr char kStop = '.';
constexpr char kNone = 'N';
constexpr char kNewTrue = '\x88';
constexpr char kNewFalse = '\x89';
constexpr char kBinInt = 'J';
constexpr char kBinInt1 = 'K';
constexpr char kBinInt2 = 'M';
constexpr char kLong1 = '\x8a';
constexpr char kBinFloat = 'G';
constexpr char kBinUnicode = 'X';
constexpr char kEmptyList = ']';
constexpr char kAppends = 'e';
constexpr char kEmptyDict = '}';
constexpr char kSetItems = 'u';
constexpr char kMark = '(';
constexpr char kTuple = 't';
constexpr char kBinPut = 'q';
constexpr char kLongBinPut = 'r';
constexpr char kBinGet = 'h';
constexpr char kLongBinGet = 'j';

// Python's pickler closes a batch of APPENDS or SETITEMS every 1000 items.
constexpr std::size_t kBatch = 1000;

std::array<char, 4> little_endian32(std::uint32_t value) {
  return {static_cast<char>(value & 0xff), static_cast<char>((value >> 8) & 0xff),
          static_cast<char>((value >> 16) & 0xff), static_cast<char>((value >> 24) & 0xff)};
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = storage::utf8_sequence(text, i);
    if (length == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

PickleWriter::PickleWriter(std::ostream& out) : out_(out) {
  put(kProto);
  put('\x02');
}

void PickleWriter::put(char opcode) {
  out_.put(opcode);
}

void PickleWriter::bytes(const void* data, std::size_t size) {
  out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}

void PickleWriter::before_value() {
  if (open_.empty()) return;
  Open& parent = open_.back();
  if (parent.container != Container::kTuple && parent.pending == 0) put(kMark);
}

void PickleWriter::after_value() {
  if (open_.empty()) return;
  Open& parent = open_.back();
  parent.pending += 1;
  if (parent.container == Container::kList && parent.pending == kBatch) {
    put(kAppends);
    parent.pending = 0;
  } else if (parent.container == Container::kDict && parent.pending == 2 * kBatch) {
    put(kSetItems);
    parent.pending = 0;
  }
}

void PickleWriter::none() {
  before_value();
  put(kNone);
  after_value();
}

void PickleWriter::boolean(bool value) {
  before_value();
  put(value ? kNewTrue : kNewFalse);
  after_value();
}

// LONG1: a byte count, then the value in as few little-endian two's complement bytes as hold
// it. `bits` is the value's low 64 bits; `negative` says whether it is below 0 (then `bits` is
// its two's complement already).
void PickleWriter::long1(std::uint64_t bits, bool negative) {
  std::array<unsigned char, 9> le{};
  for (std::size_t k = 0; k < 8; ++k) le[k] = static_cast<unsigned char>((bits >> (8 * k)) & 0xff);
  le[8] = negative ? 0xff : 0x00;
  std::size_t length = 9;
  // Drop a top byte that only repeats the sign of the byte below it.
  while (length > 1) {
    const unsigned char top = le[length - 1];
    const bool below_negative = (le[length - 2] & 0x80) != 0;
    if ((top == 0x00 && !below_negative) || (top == 0xff && below_negative)) {
      --length;
    } else {
      break;
    }
  }
  put(kLong1);
  put(static_cast<char>(length));
  bytes(le.data(), length);
}

void PickleWriter::integer(std::int64_t value) {
  before_value();
  if (value >= 0 && value <= 0xff) {
    put(kBinInt1);
    put(static_cast<char>(value));
  } else if (value >= 0 && value <= 0xffff) {
    put(kBinInt2);
    put(static_cast<char>(value & 0xff));
    put(static_cast<char>((value >> 8) & 0xff));
  } else if (value >= std::numeric_limits<std::int32_t>::min() &&
             value <= std::numeric_limits<std::int32_t>::max()) {
    put(kBinInt);
    bytes(little_endian32(static_cast<std::uint32_t>(static_cast<std::int32_t>(value))).data(), 4);
  } else {
    long1(static_cast<std::uint64_t>(value), value < 0);
  }
  after_value();
}

void PickleWriter::unsigned_integer(std::uint64_t value) {
  if (value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    integer(static_cast<std::int64_t>(value));
    return;
  }
  before_value();
  long1(value, false);
  after_value();
}

void PickleWriter::floating(double value) {
  before_value();
  put(kBinFloat);
  const auto bits = std::bit_cast<std::uint64_t>(value);
  for (int k = 7; k >= 0; --k) put(static_cast<char>((bits >> (8 * k)) & 0xff));
  after_value();
}

void PickleWriter::string(std::string_view utf8) {
  const std::string text = valid_utf8(utf8);
  if (text.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("a string too long for a pickle's BINUNICODE");
  before_value();
  put(kBinUnicode);
  bytes(little_endian32(static_cast<std::uint32_t>(text.size())).data(), 4);
  bytes(text.data(), text.size());
  after_value();
}

void PickleWriter::begin_list() {
  before_value();
  put(kEmptyList);
  open_.push_back({Container::kList});
}

void PickleWriter::begin_dict() {
  before_value();
  put(kEmptyDict);
  open_.push_back({Container::kDict});
}

void PickleWriter::begin_tuple() {
  before_value();
  put(kMark);
  open_.push_back({Container::kTuple});
}

void PickleWriter::end_list() {
  close(Container::kList);
}
void PickleWriter::end_dict() {
  close(Container::kDict);
}
void PickleWriter::end_tuple() {
  close(Container::kTuple);
}

// The opcode that ends a container: APPENDS or SETITEMS for the values since the last MARK
// (none when there are none), TUPLE always.
void PickleWriter::close(Container container) {
  if (open_.empty() || open_.back().container != container)
    throw std::logic_error("PickleWriter: a container closed that is not the open one");
  const std::size_t pending = open_.back().pending;
  if (container == Container::kDict && pending % 2 != 0)
    throw std::logic_error("PickleWriter: a dict closed after a key without its value");
  if (container == Container::kTuple) {
    put(kTuple);
  } else if (pending != 0) {
    put(container == Container::kList ? kAppends : kSetItems);
  }
  open_.pop_back();
  after_value();
}

// A memo index: one byte when it fits (BINPUT, BINGET), else four (LONG_BINPUT, LONG_BINGET).
void PickleWriter::memo_opcode(char short_form, char long_form, std::uint32_t index) {
  if (index <= 0xff) {
    put(short_form);
    put(static_cast<char>(index));
  } else {
    put(long_form);
    bytes(little_endian32(index).data(), 4);
  }
}

std::uint32_t PickleWriter::remember() {
  const std::uint32_t index = next_memo_++;
  memo_opcode(kBinPut, kLongBinPut, index);
  return index;
}

void PickleWriter::recall(std::uint32_t index) {
  if (index >= next_memo_) throw std::logic_error("PickleWriter: recall of nothing remembered");
  before_value();
  memo_opcode(kBinGet, kLongBinGet, index);
  after_value();
}

void PickleWriter::interned(std::string_view utf8) {
  const auto found = interned_.find(std::string(utf8));
  if (found != interned_.end()) {
    recall(found->second);
    return;
  }
  string(utf8);
  interned_.emplace(std::string(utf8), remember());
}

void PickleWriter::finish() {
  if (!open_.empty()) throw std::logic_error("PickleWriter: finish with a container open");
  put(kStop);
}

}  // namespace vramtrace::analysis
