// A test fixture holding the allocator trace (allocator_trace.h), written and opened for each
// test: the analyses that read it over time share this setup.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "allocator_trace.h"
#include "storage/trace_reader.h"
#include "temp_dir.h"

namespace vramtrace::testing {

class AllocatorTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(write_allocator_trace(path_), "");
    storage::OpenFailure failure;
    trace_ = storage::TraceReader::open(path_, &failure);
    ASSERT_NE(trace_, nullptr) << failure.message;
  }

  TempDir dir_;
  std::filesystem::path path_ = dir_ / "allocator.db";
  std::unique_ptr<storage::TraceReader> trace_;
};

}  // namespace vramtrace::testing
