#include "analysis/values/byte_size.h"

#include <array>
#include <cctype>
#include <cmath>
#include <string>

namespace vramtrace::analysis {
namespace {

struct Unit {
  std::string_view name;
  double bytes;
};

constexpr std::array<Unit, 9> kUnits{{
    {"b", 1.0},
    {"kib", 1024.0},
    {"mib", 1024.0 * 1024},
    {"gib", 1024.0 * 1024 * 1024},
    {"tib", 1024.0 * 1024 * 1024 * 1024},
    {"kb", 1e3},
    {"mb", 1e6},
    {"gb", 1e9},
    {"tb", 1e12},
}};

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  std::size_t i = 0;
  std::uint64_t whole = 0;
  bool digits = false;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (whole > (UINT64_MAX - digit) / 10) return std::nullopt;
    whole = whole * 10 + digit;
    digits = true;
  }
  double fraction = 0;
  if (i < text.size() && text[i] == '.') {
    double scale = 0.1;
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      fraction += (text[i] - '0') * scale;
      scale /= 10;
      digits = true;
    }
  }
  if (!digits) return std::nullopt;
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string unit = lower(text.substr(i));
  if (unit.empty()) {
    if (fraction != 0) return std::nullopt;  // a fraction of a byte
    return whole;
  }
  for (const Unit& known : kUnits) {
    if (unit != known.name) continue;
    const long double bytes =
        (static_cast<long double>(whole) + fraction) * static_cast<long double>(known.bytes);
    if (bytes >= 18446744073709551616.0L) return std::nullopt;
    return static_cast<std::uint64_t>(std::floor(bytes));
  }
  return std::nullopt;
}

}  // namespace vramtrace::analysis
