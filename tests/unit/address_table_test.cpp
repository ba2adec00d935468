// The collector's flat address table (collector/address_table.h) against std::unordered_map:
// random inserts, replacements and removals, with addresses that crowd one another's slots.
#include "collector/address_table.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

namespace vramtrace::collector {
namespace {

TEST(AddressTable, FindsInsertsReplacesAndErases) {
  AddressTable<int> table;
  int old = 0;
  EXPECT_EQ(table.find(0x1000), nullptr);
  EXPECT_FALSE(table.erase(0x1000, &old));
  EXPECT_TRUE(table.insert_or_replace(0x1000, 1, &old));
  EXPECT_TRUE(table.insert_or_replace(0, 2, &old));  // address 0 is an address like any other
  ASSERT_NE(table.find(0x1000), nullptr);
  EXPECT_EQ(*table.find(0x1000), 1);
  EXPECT_EQ(*table.find(0), 2);
  EXPECT_FALSE(table.insert_or_replace(0x1000, 3, &old));
  EXPECT_EQ(old, 1);
  EXPECT_EQ(*table.find(0x1000), 3);
  EXPECT_TRUE(table.erase(0x1000, &old));
  EXPECT_EQ(old, 3);
  EXPECT_EQ(table.find(0x1000), nullptr);
  EXPECT_EQ(table.size(), 1u);
  table.clear();
  EXPECT_EQ(table.find(0), nullptr);
  EXPECT_EQ(table.size(), 0u);
}

// Many operations in a random order, against the standard map: every lookup agrees, through
// growth, removals in the middle of probe runs (backward shifts), and runs that wrap around the
// end of the array. Few distinct addresses, so that inserts often replace and erases often find.
TEST(AddressTable, AgreesWithAnUnorderedMapOverRandomOperations) {
  std::mt19937_64 random(20261130);
  for (const size_t distinct : {50u, 3000u, 100000u}) {
    SCOPED_TRACE(distinct);
    std::vector<uint64_t> addresses(distinct);
    for (uint64_t& a : addresses) a = 0x7f0000000000 + (random() % (distinct * 4)) * 512;
    AddressTable<uint64_t> table;
    std::unordered_map<uint64_t, uint64_t> expected;
    for (int i = 0; i < 400000; ++i) {
      const uint64_t address = addresses[random() % addresses.size()];
      const uint64_t value = random();
      uint64_t old = 0;
      switch (random() % 3) {
        case 0: {
          auto [it, inserted] = expected.try_emplace(address, value);
          const uint64_t before = it->second;
          it->second = value;
          ASSERT_EQ(table.insert_or_replace(address, value, &old), inserted);
          if (!inserted) {
            ASSERT_EQ(old, before);
          }
          break;
        }
        case 1: {
          auto it = expected.find(address);
          ASSERT_EQ(table.erase(address, &old), it != expected.end());
          if (it != expected.end()) {
            ASSERT_EQ(old, it->second);
            expected.erase(it);
          }
          break;
        }
        default: {
          auto it = expected.find(address);
          const uint64_t* found = table.find(address);
          ASSERT_EQ(found != nullptr, it != expected.end());
          if (found != nullptr) {
            ASSERT_EQ(*found, it->second);
          }
        }
      }
      ASSERT_EQ(table.size(), expected.size());
    }
    size_t seen = 0;
    table.for_each([&](uint64_t address, uint64_t value) {
      ++seen;
      auto it = expected.find(address);
      ASSERT_NE(it, expected.end());
      EXPECT_EQ(it->second, value);
    });
    EXPECT_EQ(seen, expected.size());
  }
}

}  // namespace
}  // namespace vramtrace::collector
