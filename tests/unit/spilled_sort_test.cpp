// analysis/export/spilled_sort: records sorted through runs on disk come back as an in-memory
// stable sort would give them, whatever the budget; a folder it cannot write is named.
#include "analysis/export/spilled_sort.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace vramtrace {
namespace {

using analysis::SortKey;
using analysis::SpilledSort;

struct Record {
  SortKey key;
  std::string payload;
};

// Many ties (keys from a small range), and payloads of 0 to 300 bytes.
std::vector<Record> records(std::size_t count) {
  std::mt19937_64 random(7);
  std::vector<Record> made;
  for (std::size_t i = 0; i < count; ++i) {
    const SortKey key{static_cast<std::int64_t>(random() % 50) - 25,
                      static_cast<std::int64_t>(random() % 3), 0};
    made.push_back({key, std::to_string(i) + std::string(random() % 300, 'x')});
  }
  return made;
}

std::vector<std::string> sorted_through(SpilledSort& sort, const std::vector<Record>& input) {
  for (const Record& record : input) sort.add(record.key, record.payload);
  std::vector<std::string> out;
  sort.drain([&](std::string_view payload) { out.emplace_back(payload); });
  return out;
}

std::vector<std::string> expected(std::vector<Record> input) {
  std::stable_sort(input.begin(), input.end(),
                   [](const Record& a, const Record& b) { return a.key < b.key; });
  std::vector<std::string> out;
  for (const Record& record : input) out.push_back(record.payload);
  return out;
}

TEST(SpilledSortTest, RunsOnDiskMergeIntoAStableSort) {
  const std::vector<Record> input = records(20000);
  SpilledSort sort(16 << 10);
  const std::vector<std::string> out = sorted_through(sort, input);
  EXPECT_GT(sort.runs_written(), 100u);  // the merge, not the memory, did the work
  EXPECT_EQ(out, expected(input));
  EXPECT_EQ(sort.records(), 0u);  // drained
}

TEST(SpilledSortTest, WithinItsBudgetNothingGoesToDisk) {
  const std::vector<Record> input = records(500);
  SpilledSort sort;
  EXPECT_EQ(sorted_through(sort, input), expected(input));
  EXPECT_EQ(sort.runs_written(), 0u);
}

TEST(SpilledSortTest, AFolderItCannotWriteIsNamed) {
  const char* was = getenv("TMPDIR");
  const std::string saved = was ? was : "";
  setenv("TMPDIR", "/nonexistent/vramtrace-sort", 1);
  SpilledSort sort(64);
  try {
    sort.add({1, 0, 0}, std::string(100, 'x'));
    ADD_FAILURE() << "a run was written to a folder that does not exist";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/vramtrace-sort"), std::string::npos)
        << error.what();
  }
  if (was)
    setenv("TMPDIR", saved.c_str(), 1);
  else
    unsetenv("TMPDIR");
}

}  // namespace
}  // namespace vramtrace
