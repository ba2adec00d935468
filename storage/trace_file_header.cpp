#include "storage/trace_file_header.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
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

// A FIFO, socket or device: SQLite would block on a FIFO's open, and none of them is a trace.
FileInspection not_regular(std::filesystem::file_type type) {
  using Type = std::filesystem::file_type;
  const char* what = "not a regular file";
  switch (type) {
    case Type::fifo:
      what = "a named pipe (FIFO), not a regular file";
      break;
    case Type::socket:
      what = "a socket, not a regular file";
      break;
    case Type::block:
    case Type::character:
      what = "a device, not a regular file";
      break;
    default:
      break;
  }
  return {FileVerdict::kUnreadable, what};
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
  if (!std::filesystem::is_regular_file(status)) return not_regular(status.type());

  // O_NONBLOCK: a FIFO put in the file's place since the look above must not block the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {FileVerdict::kUnreadable, std::strerror(errno)};
  struct stat file_status {};
  if (::fstat(fd, &file_status) != 0 || !S_ISREG(file_status.st_mode)) {
    ::close(fd);
    return {FileVerdict::kUnreadable, "not a regular file"};
  }
  std::array<char, kHeaderSize> header{};
  std::size_t bytes_read = 0;
  while (bytes_read < header.size()) {
    const ssize_t n = ::pread(fd, header.data() + bytes_read, header.size() - bytes_read,
                              static_cast<off_t>(bytes_read));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      return {FileVerdict::kUnreadable, reason};
    }
    if (n == 0) break;
    bytes_read += static_cast<std::size_t>(n);
  }
  ::close(fd);
  const auto file_size = static_cast<std::uintmax_t>(file_status.st_size);

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
