#include "storage/json_string_array.h"

#include <array>

namespace vramtrace::storage {
namespace {

void append_escaped(std::string* out, const std::string& value) {
  constexpr std::array<char, 16> kHex{'0', '1', '2', '3', '4', '5', '6', '7',
                                      '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  out->push_back('"');
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\r':
        out->append("\\r");
        break;
      default:
        if (byte < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[byte >> 4]);
          out->push_back(kHex[byte & 0xf]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

}  // namespace

std::string to_json_string_array(const std::vector<std::string>& strings) {
  std::string out = "[";
  for (std::size_t i = 0; i < strings.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_escaped(&out, strings[i]);
  }
  out.push_back(']');
  return out;
}

}  // namespace vramtrace::storage
