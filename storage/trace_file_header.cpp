#include "storage/trace_file_header.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <system_error>

namespace vramtrace::storage {
namespace {

// https://www.sqlite.org/fileformat.html#the_database_header
constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};
constexpr std::size_t kHeaderSize = 100;
constexpr std::size_t kPageSizeOffset = 16;       // 2 bytes, big-endian; 1 means 65536
constexpr std::size_t kChangeCounterOffset = 24;  // 4 bytes
constexpr std::size_t kPageCountOffset = 28;      // 4 bytes: "in-header database size"
constexpr std::size_t kVersionValidForOffset = 92;

std::uint32_t read_big_endian(const std::array<char, kHeaderSize>& header, std::size_t offset,
                              std::size_t width) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < width; ++i) {
    value = (value << 8) | static_cast<unsigned char>(header[offset + i]);
  }
  return value;
}

FileInspection truncated(std::uintmax_t actual, std::uintmax_t expected) {
  return {FileVerdict::kTruncated,
          std::to_string(actual) + " of " + std::to_string(expected) + " bytes"};
}

}  // namespace

FileInspection inspect_trace_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) return {FileVerdict::kMissing, {}};
  if (ec) return {FileVerdict::kUnreadable, ec.message()};
  if (std::filesystem::is_directory(status)) return {FileVerdict::kUnreadable, "a directory"};

  std::ifstream file(path, std::ios::binary);
  if (!file) return {FileVerdict::kUnreadable, std::strerror(errno)};
  std::array<char, kHeaderSize> header{};
  file.read(header.data(), header.size());
  const auto bytes_read = static_cast<std::size_t>(file.gcount());
  const std::uintmax_t file_size = std::filesystem::file_size(path, ec);
  if (ec) return {FileVerdict::kUnreadable, ec.message()};

  if (bytes_read == 0) return {FileVerdict::kEmpty, {}};
  const std::string_view start(header.data(), std::min(bytes_read, kSqliteMagic.size()));
  if (!kSqliteMagic.starts_with(start)) return {FileVerdict::kNotSqlite, {}};
  if (bytes_read < kHeaderSize) return truncated(bytes_read, kHeaderSize);

  // While the WAL exists the main file may lag behind its own header (mid-checkpoint); SQLite
  // reads the newest pages from the WAL then, and reports real damage itself.
  if (std::filesystem::exists(path.string() + "-wal", ec)) return {FileVerdict::kLooksSound, {}};

  std::uintmax_t page_size = read_big_endian(header, kPageSizeOffset, 2);
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || (page_size & (page_size - 1)) != 0) {
    return {FileVerdict::kNotSqlite, {}};
  }
  // The in-header page count is only trustworthy when the last writer was SQLite ≥ 3.7.0,
  // which it says by copying the change counter to version-valid-for.
  const bool page_count_valid = read_big_endian(header, kChangeCounterOffset, 4) ==
                                read_big_endian(header, kVersionValidForOffset, 4);
  const std::uintmax_t page_count = read_big_endian(header, kPageCountOffset, 4);
  if (page_count_valid && page_count > 0 && file_size < page_count * page_size) {
    return truncated(file_size, page_count * page_size);
  }
  if (file_size % page_size != 0) {
    return truncated(file_size, (file_size / page_size + 1) * page_size);
  }
  return {FileVerdict::kLooksSound, {}};
}

}  // namespace vramtrace::storage
