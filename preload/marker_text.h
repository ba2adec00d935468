// A marker's name or domain, copied into a fixed buffer as valid UTF-8.
//
// The wire's strings are protobuf `string`s, which libprotobuf rejects unless they are valid
// UTF-8: one bad byte in an NVTX message would make the collector drop the whole record. So
// narrow text is checked sequence by sequence (bytes that are not UTF-8 become U+FFFD), wide
// text (UTF-32 on Linux) is encoded, and both are cut at a sequence boundary when they do not
// fit. No heap: the buffer is part of the object, which lives on the caller's stack.
#pragma once

#include <cstddef>

namespace vramtrace::preload {

class MarkerText {
 public:
  // Bytes kept, the terminating NUL included. Longer text is cut, never split mid-character.
  static constexpr size_t kCapacity = 256;

  MarkerText() { text_[0] = '\0'; }
  explicit MarkerText(const char* utf8) { assign(utf8); }
  // A constant name, for constant-initialised tables. It must be valid UTF-8.
  template <size_t N>
  static constexpr MarkerText constant(const char (&literal)[N]) {
    static_assert(N <= kCapacity);
    MarkerText text(kZeroed);
    for (size_t i = 0; i < N; ++i) text.text_[i] = literal[i];
    text.size_ = N - 1;
    return text;
  }

  // Null is the empty string. Reads the source only as far as it needs.
  void assign(const char* text);
  void assign(const wchar_t* text);

  const char* c_str() const { return text_; }
  size_t size() const { return size_; }

 private:
  // Appends the code point if its encoding fits; false (and nothing appended) if not.
  bool append(char32_t code_point);
  bool append_bytes(const char* bytes, size_t count);

  enum Zeroed { kZeroed };
  constexpr explicit MarkerText(Zeroed) : text_{} {}

  char text_[kCapacity];
  size_t size_ = 0;
};

}  // namespace vramtrace::preload
