// Parsing of byte sizes written by people in environment variables ("16GiB", "512M", "1048576").
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace simcuda {

namespace detail {

constexpr char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

constexpr bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

constexpr std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Multiplier of a unit suffix, or 0 when the suffix is not one we accept. Every unit is binary:
// K and KiB both mean 1024. Decimal spellings ("KB", "MB") are rejected rather than guessed,
// since people mean 1000 or 1024 by them about equally often.
constexpr std::uint64_t unit_multiplier(std::string_view unit) {
  constexpr std::string_view kShort[] = {"", "k", "m", "g", "t"};
  constexpr std::string_view kLong[] = {"b", "kib", "mib", "gib", "tib"};
  std::uint64_t multiplier = 1;
  for (std::size_t i = 0; i < 5; ++i, multiplier *= 1024) {
    if (iequals(unit, kShort[i]) || iequals(unit, kLong[i])) return multiplier;
  }
  return 0;
}

}  // namespace detail

// "<digits>[ ]<unit>" with the units of detail::unit_multiplier. Returns nullopt for anything
// else, including values that overflow 64 bits.
constexpr std::optional<std::uint64_t> parse_size(std::string_view text) {
  text = detail::trim(text);
  std::uint64_t value = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const auto digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (i == 0) return std::nullopt;
  const std::uint64_t multiplier = detail::unit_multiplier(detail::trim(text.substr(i)));
  if (multiplier == 0) return std::nullopt;
  if (value > std::numeric_limits<std::uint64_t>::max() / multiplier) return std::nullopt;
  return value * multiplier;
}

}  // namespace simcuda
