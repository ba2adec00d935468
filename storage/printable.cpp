#include "storage/printable.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace vramtrace::storage {
std::size_t utf8_sequence(std::string_view text, std::size_t i, std::uint32_t* code_point) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  std::uint32_t code = 0;
  if (lead < 0x80) {
    length = 1;
    code = lead;
  } else if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    code = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    code = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    code = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3f);
  }
  // Overlong forms, surrogates and past U+10FFFF are not UTF-8.
  static constexpr std::uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kMinimum[length] || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) return 0;
  if (code_point != nullptr) *code_point = code;
  return length;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    std::uint32_t code = 0;
    const std::size_t length = c >= 0x80 ? utf8_sequence(text, i, &code) : 0;
    // C1 controls (U+0080 to U+009F) act as escapes on some terminals, as ESC does.
    if (length != 0 && code > 0x9f) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    char escaped[5];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
    out += escaped;
    ++i;
  }
  return out;
}

std::string printable_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find_first_of("\n\t", start), text.size());
    out += printable(text.substr(start, end - start));
    if (end < text.size()) out += text[end];
    start = end + 1;
  }
  return out;
}

}  // namespace vramtrace::storage
