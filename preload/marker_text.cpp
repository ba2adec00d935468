#include "marker_text.h"

#include <cstdint>
#include <cstring>

namespace vramtrace::preload {
namespace {

constexpr char32_t kReplacement = 0xfffd;

bool is_continuation(unsigned char c) {
  return (c & 0xc0) == 0x80;
}

// Length of the valid UTF-8 sequence at `s` (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or 0 when the bytes there are not one. Never reads past a NUL,
// since a NUL is not a continuation byte.
size_t valid_sequence_length(const unsigned char* s) {
  const unsigned char c = s[0];
  if (c < 0x80) return 1;
  if (c < 0xc2) return 0;  // a continuation byte, or an overlong 2-byte lead
  if (c < 0xe0) return is_continuation(s[1]) ? 2 : 0;
  if (c < 0xf0) {
    if (!is_continuation(s[1]) || !is_continuation(s[2])) return 0;
    if (c == 0xe0 && s[1] < 0xa0) return 0;   // overlong
    if (c == 0xed && s[1] >= 0xa0) return 0;  // UTF-16 surrogates
    return 3;
  }
  if (c < 0xf5) {
    if (!is_continuation(s[1]) || !is_continuation(s[2]) || !is_continuation(s[3])) return 0;
    if (c == 0xf0 && s[1] < 0x90) return 0;   // overlong
    if (c == 0xf4 && s[1] >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

bool MarkerText::append_bytes(const char* bytes, size_t count) {
  if (size_ + count >= kCapacity) return false;
  std::memcpy(text_ + size_, bytes, count);
  size_ += count;
  return true;
}

bool MarkerText::append(char32_t cp) {
  if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) cp = kReplacement;
  char out[4];
  size_t n;
  if (cp < 0x80) {
    out[0] = static_cast<char>(cp);
    n = 1;
  } else if (cp < 0x800) {
    out[0] = static_cast<char>(0xc0 | (cp >> 6));
    out[1] = static_cast<char>(0x80 | (cp & 0x3f));
    n = 2;
  } else if (cp < 0x10000) {
    out[0] = static_cast<char>(0xe0 | (cp >> 12));
    out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out[2] = static_cast<char>(0x80 | (cp & 0x3f));
    n = 3;
  } else {
    out[0] = static_cast<char>(0xf0 | (cp >> 18));
    out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out[3] = static_cast<char>(0x80 | (cp & 0x3f));
    n = 4;
  }
  return append_bytes(out, n);
}

void MarkerText::assign(const char* text) {
  size_ = 0;
  if (text != nullptr) {
    const auto* s = reinterpret_cast<const unsigned char*>(text);
    while (*s != 0) {
      const size_t n = valid_sequence_length(s);
      if (n == 0) {
        if (!append(kReplacement)) break;
        ++s;  // one replacement per bad byte, then resynchronise on the next
      } else {
        if (!append_bytes(reinterpret_cast<const char*>(s), n)) break;
        s += n;
      }
    }
  }
  text_[size_] = '\0';
}

void MarkerText::assign(const wchar_t* text) {
  static_assert(sizeof(wchar_t) == 4, "wide strings are UTF-32 on Linux");
  size_ = 0;
  if (text != nullptr) {
    for (const wchar_t* w = text; *w != 0; ++w)
      if (!append(static_cast<char32_t>(static_cast<uint32_t>(*w)))) break;
  }
  text_[size_] = '\0';
}

}  // namespace vramtrace::preload
