#include "storage/trace_file_uri.h"

#include <system_error>

namespace vramtrace::storage {

std::string sqlite_file_uri(const std::filesystem::path& path, std::string_view query) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) absolute = path;
  std::string uri = "file:";
  for (const char c : absolute.string()) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f || c == '%' || c == '?' || c == '#') {
      uri += '%';
      uri += kDigits[byte >> 4];
      uri += kDigits[byte & 0xf];
    } else {
      uri += c;
    }
  }
  if (!query.empty()) uri += "?" + std::string(query);
  return uri;
}

bool trace_may_be_written(const std::filesystem::path& path) {
  std::error_code ec;
  // When it cannot be known, assume a writer: mode=ro is always correct, only less convenient.
  return std::filesystem::exists(path.string() + "-wal", ec) || ec;
}

std::string read_only_trace_uri(const std::filesystem::path& path) {
  // A -journal: a write under way (the time index built into the file) or interrupted, whose
  // pages an immutable open would read half written.
  std::error_code ec;
  const bool journal = std::filesystem::exists(path.string() + "-journal", ec) || ec;
  return sqlite_file_uri(path, trace_may_be_written(path) || journal ? "mode=ro" : "immutable=1");
}

}  // namespace vramtrace::storage
