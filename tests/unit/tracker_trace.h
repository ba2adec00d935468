// A trace file for one tracker's test: the tracker writes to writer(), and the test reads
// what it wrote after finish().
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"

namespace vramtrace::testing {

class TrackerTrace {
 public:
  TrackerTrace() : path_(dir_ / "trace.db") {
    std::string error;
    writer_ = storage::TraceWriter::create(path_, &error);
    EXPECT_TRUE(writer_) << error;
  }

  storage::TraceWriter& writer() { return *writer_; }
  // The process and thread rows that a tracker's rows refer to.
  void add_process_and_thread(int64_t upid, int64_t utid, uint32_t tid) {
    storage::ProcessRow process;
    process.upid = upid;
    writer_->add_process(process);
    writer_->add_thread(utid, upid, tid);
  }
  const std::filesystem::path& path() const { return path_; }

  // Closes the trace and opens it for reading; later calls return the same reader.
  const storage::TraceReader& finish() {
    if (reader_) return *reader_;
    std::string error;
    EXPECT_TRUE(writer_->finish(&error)) << error;
    writer_.reset();
    storage::OpenFailure failure;
    reader_ = storage::TraceReader::open(path_, &failure);
    EXPECT_TRUE(reader_) << failure.message;
    return *reader_;
  }

 private:
  TempDir dir_;
  std::filesystem::path path_;
  std::unique_ptr<storage::TraceWriter> writer_;
  std::unique_ptr<storage::TraceReader> reader_;
};

}  // namespace vramtrace::testing
