// A Python pickle, protocol 2, written straight to a stream: what Python's pickle.load() (and
// so torch's memory_viz tools) reads back, with no Python at build or run time.
//
// Values are written in order, containers as begin/end pairs:
//   PickleWriter out(stream);
//   out.begin_dict();
//   out.string("size"); out.integer(512);    // key, value, key, value, ...
//   out.string("frames"); out.begin_list(); out.end_list();
//   out.end_dict();
//   out.finish();                              // STOP: the pickle is complete
//
// The opcodes (Python's Lib/pickletools.py names them):
//   PROTO 2; NONE; NEWTRUE / NEWFALSE; BININT1, BININT2, BININT for 0..255, ..65535 and the
//   rest of int32, LONG1 (little-endian two's complement) past int32; BINFLOAT (big-endian
//   IEEE 754 double); BINUNICODE (4-byte length, UTF-8: invalid bytes are written as U+FFFD,
//   since the unpickler refuses them); EMPTY_LIST + MARK ... APPENDS and EMPTY_DICT + MARK ...
//   SETITEMS, in batches of 1000 as Python's pickler writes them; MARK ... TUPLE; BINPUT /
//   LONG_BINPUT and BINGET / LONG_BINGET for the memo.
//
// The memo lets one object stand in many places (a stack shared by many events, a key string):
// remember() files the value just written and returns its index, recall() writes it again by
// reference. Unpickled, every recall is the same Python object.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vramtrace::analysis {

class PickleWriter {
 public:
  // Writes the protocol header. The stream's state is the caller's to check.
  explicit PickleWriter(std::ostream& out);

  void none();
  void boolean(bool value);
  void integer(std::int64_t value);
  void unsigned_integer(std::uint64_t value);
  void floating(double value);
  void string(std::string_view utf8);

  void begin_list();
  void end_list();
  void begin_dict();  // then key, value, key, value, ...
  void end_dict();
  void begin_tuple();
  void end_tuple();

  // Files the value last written (complete: after its end_*) in the memo; returns its index.
  std::uint32_t remember();
  // Writes the value filed under `index` again, as a reference to the same object.
  void recall(std::uint32_t index);

  // A string written once and recalled after: for keys and names that repeat.
  void interned(std::string_view utf8);

  // STOP. Every container must be closed.
  void finish();

 private:
  enum class Container { kList, kDict, kTuple };
  struct Open {
    Container container;
    std::size_t pending = 0;  // values since the last MARK
  };
  void before_value();
  void after_value();
  void close(Container container);
  void memo_opcode(char short_form, char long_form, std::uint32_t index);
  void put(char opcode);
  void bytes(const void* data, std::size_t size);
  void long1(std::uint64_t bits, bool negative);

  std::ostream& out_;
  std::vector<Open> open_;
  std::uint32_t next_memo_ = 0;
  std::unordered_map<std::string, std::uint32_t> interned_;
};

// `text` with every byte sequence that is not valid UTF-8 replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

}  // namespace vramtrace::analysis
