// A test fixture with a scratch directory per test (under the system's temporary directory,
// named after the test and this process), removed afterwards.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace vramtrace::test {

class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("vramtrace-e2e-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string trace(const std::string& name = "trace.db") const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

}  // namespace vramtrace::test
