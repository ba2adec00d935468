#include "analysis/gate/gate_spec.h"

#include "analysis/values/byte_size.h"

namespace vramtrace::analysis {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

constexpr std::string_view kRolePrefix = "role.";

bool set_limit(std::string_view name, std::string_view value, GateLimits* limits,
               std::string* error) {
  if (name.starts_with(kRolePrefix))
    return set_role_limit(name.substr(kRolePrefix.size()), value, limits, error);
  const std::optional<std::uint64_t> number = parse_byte_size(value);
  if (!number) {
    *error = "'" + std::string(value) + "' is not a size (such as 0, 512MiB, 2GB)";
    return false;
  }
  if (name == "leaked_bytes") {
    limits->max_leaked_bytes = number;
  } else if (name == "peak") {
    limits->max_peak = number;
  } else if (name == "growth") {
    limits->max_growth = number;
  } else if (name == "leaked_count") {
    if (value.find_first_not_of("0123456789") != std::string_view::npos) {
      *error = "leaked_count takes a plain count, not '" + std::string(value) + "'";
      return false;
    }
    limits->max_leaked_count = number;
  } else {
    *error = "unknown limit '" + std::string(name) +
             "' (known: leaked_bytes, leaked_count, peak, growth, role.ROLE)";
    return false;
  }
  return true;
}

}  // namespace

bool set_role_limit(std::string_view role, std::string_view size, GateLimits* limits,
                    std::string* error) {
  std::string known;
  for (std::size_t r = 0; r < kBlockRoles; ++r) {
    const std::string_view name = block_role_name(static_cast<BlockRole>(r));
    if (name != role) {
      known += (known.empty() ? "" : ", ") + std::string(name);
      continue;
    }
    const std::optional<std::uint64_t> bytes = parse_byte_size(size);
    if (!bytes) {
      *error = "'" + std::string(size) + "' is not a size (such as 0, 512MiB, 2GB)";
      return false;
    }
    // Two limits for one role are a mistake in the spec, not a choice of the last.
    if (limits->max_role[r]) {
      *error = "the role '" + std::string(role) + "' is given a limit twice";
      return false;
    }
    limits->max_role[r] = bytes;
    return true;
  }
  *error = "unknown role '" + std::string(role) + "' (known: " + known + ")";
  return false;
}

bool parse_gate_spec(std::string_view spec, GateLimits* limits, std::string* error) {
  if (trim(spec).empty()) {
    *error = "the gate names no limit";
    return false;
  }
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view term = trim(spec.substr(0, comma));
    spec.remove_prefix(comma == std::string_view::npos ? spec.size() : comma + 1);
    const std::size_t equals = term.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      *error = "'" + std::string(term) + "' is not NAME=VALUE or NAME<=VALUE";
      return false;
    }
    const bool at_most = term[equals - 1] == '<';
    const std::string_view name = trim(term.substr(0, at_most ? equals - 1 : equals));
    if (!set_limit(name, trim(term.substr(equals + 1)), limits, error)) return false;
  }
  return true;
}

}  // namespace vramtrace::analysis
