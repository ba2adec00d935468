// The writer's choice of repeated bins (storage/repeat_folder.h): a bin that repeats a stored
// one but for its numbers, ids and times is an instance of a run; anything else about it that
// differs makes it a bin of its own; runs keep even steps, end at the span limit, and the
// stored bins remembered stay within their budget.
#include "storage/repeat_folder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

namespace vramtrace::storage {
namespace {

// A loop's bin: `pairs` allocations freed one number later, starting at number `seq`, id `id`,
// time `ns`, an event a microsecond.
std::vector<PackedAllocation> bin(std::uint64_t seq, std::int64_t id, std::int64_t ns,
                                  int pairs = 100, std::uint64_t address = 0x1000) {
  std::vector<PackedAllocation> allocations;
  for (int i = 0; i < pairs; ++i) {
    PackedAllocation a;
    a.id = id + i;
    a.site_id = 1 + i % 3;
    a.address = address + static_cast<std::uint64_t>(i % 3) * 256;
    a.size = 256;
    a.alloc_seq = seq + 2 * static_cast<std::uint64_t>(i);
    a.alloc_ns = ns + 2000 * i;
    a.free_site_id = 1;
    a.free_seq_delta = 1;
    a.free_ns_delta = 1000;
    allocations.push_back(a);
  }
  return allocations;
}

TEST(RepeatFolderTest, ABinLikeAStoredOneButForNumbersIdsAndTimesIsARepeat) {
  RepeatFolder folder;
  EXPECT_FALSE(folder.add_bin(1, bin(1, 1, 0)).repeat);
  const RepeatFolder::Outcome second = folder.add_bin(1, bin(4097, 101, 4'000'000));
  EXPECT_TRUE(second.repeat);
  EXPECT_TRUE(second.ended.empty());
  EXPECT_EQ(folder.folded_bins(), 1);
  EXPECT_EQ(folder.folded_allocations(), 100);
}

TEST(RepeatFolderTest, AnythingElseThatDiffersIsABinOfItsOwn) {
  RepeatFolder folder;
  ASSERT_FALSE(folder.add_bin(1, bin(1, 1, 0)).repeat);
  auto other_size = bin(4097, 101, 4'000'000);
  other_size[50].size = 512;
  EXPECT_FALSE(folder.add_bin(1, other_size).repeat);
  auto other_address = bin(8193, 201, 8'000'000);
  other_address[99].address += 8;
  EXPECT_FALSE(folder.add_bin(1, other_address).repeat);
  auto other_life = bin(12289, 301, 12'000'000);
  other_life[7].free_seq_delta = 2;
  EXPECT_FALSE(folder.add_bin(1, other_life).repeat);
  auto other_ids = bin(16385, 401, 16'000'000);
  other_ids[99].id += 1;  // another process's allocation took an id between
  EXPECT_FALSE(folder.add_bin(1, other_ids).repeat);
  // Fewer allocations, and another process's bin of the same shape.
  EXPECT_FALSE(folder.add_bin(1, bin(20481, 501, 20'000'000, 99)).repeat);
  EXPECT_FALSE(folder.add_bin(2, bin(24577, 601, 24'000'000)).repeat);
  EXPECT_EQ(folder.folded_bins(), 0);
}

TEST(RepeatFolderTest, EvenStepsMakeOneRunSpreadOverItsInstances) {
  RepeatFolder folder;
  ASSERT_FALSE(folder.add_bin(1, bin(1, 1, 1'000)).repeat);
  for (int k = 1; k <= 5; ++k)
    ASSERT_TRUE(folder.add_bin(1, bin(1 + 4096 * k, 1 + 100 * k, 1'000 + 4'000'000 * k)).repeat);
  const std::vector<ChunkRepeatRun> open = folder.open_runs();
  ASSERT_EQ(open.size(), 1u);
  const std::vector<ChunkRepeatRun> ended = folder.end_runs();
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0], open[0]);
  const ChunkRepeatRun& run = ended[0];
  EXPECT_EQ(run.upid, 1);
  EXPECT_EQ(run.source_first_alloc_seq, 1u);
  EXPECT_EQ(run.source_first_id, 1);
  EXPECT_EQ(run.source_first_alloc_ns, 1'000);
  EXPECT_EQ(run.source_span_ns, 2000 * 99 + 1000);
  EXPECT_EQ(run.first_alloc_seq, 4097u);
  EXPECT_EQ(run.first_id, 101);
  EXPECT_EQ(run.first_alloc_ns, 4'001'000);
  EXPECT_EQ(run.repeats, 5);
  EXPECT_EQ(run.seq_step, 4096u);
  EXPECT_EQ(run.id_step, 100);
  EXPECT_EQ(run.instance_ns, 4'000'000);
  EXPECT_EQ(run.count, 100);
  EXPECT_EQ(run.last_seq, 1 + 4096u * 5 + 2 * 99 + 1);
  EXPECT_EQ(run.last_id, 1 + 100 * 5 + 99);
  EXPECT_TRUE(folder.end_runs().empty());

  // The instances give back the bins, times included where the steps were even.
  std::vector<PackedAllocation> source = bin(1, 1, 1'000), instances;
  for (std::int64_t k = 0; k < run.repeats; ++k) append_repeat_instance(run, k, source, &instances);
  std::vector<PackedAllocation> expected;
  for (int k = 1; k <= 5; ++k) {
    const auto b = bin(1 + 4096 * k, 1 + 100 * k, 1'000 + 4'000'000 * k);
    expected.insert(expected.end(), b.begin(), b.end());
  }
  EXPECT_EQ(instances, expected);
}

TEST(RepeatFolderTest, UnevenStepsOrALongSpanStartAnotherRun) {
  RepeatFolder folder;
  ASSERT_FALSE(folder.add_bin(1, bin(1, 1, 0)).repeat);
  ASSERT_TRUE(folder.add_bin(1, bin(4097, 101, 4'000'000)).repeat);
  ASSERT_TRUE(folder.add_bin(1, bin(8193, 201, 8'000'000)).repeat);
  // Another step: the run so far ends, and this bin starts the next.
  const RepeatFolder::Outcome skipped = folder.add_bin(1, bin(16385, 301, 16'000'000));
  EXPECT_TRUE(skipped.repeat);
  ASSERT_EQ(skipped.ended.size(), 1u);
  EXPECT_EQ(skipped.ended[0].repeats, 2);
  // A run reaches its span limit: the next bin starts another.
  std::int64_t ns = 16'000'000;
  std::uint64_t seq = 16385;
  std::int64_t id = 301;
  std::size_t ended = 0;
  for (int k = 0; k < 400; ++k) {
    seq += 4096;
    id += 100;
    ns += 4'000'000;
    const RepeatFolder::Outcome outcome = folder.add_bin(1, bin(seq, id, ns));
    ASSERT_TRUE(outcome.repeat);
    for (const ChunkRepeatRun& run : outcome.ended) {
      EXPECT_LT((run.repeats - 1) * run.instance_ns, RepeatFolder::kRunSpanLimitNs);
      ++ended;
    }
  }
  EXPECT_EQ(ended, 1u);  // 1.6 s of bins: one run of a second, then the rest
}

TEST(RepeatFolderTest, TimesThatGoBackOrSpanTooLongAreNotRepeated) {
  RepeatFolder folder;
  auto backwards = bin(1, 1, 1'000'000);
  backwards[10].alloc_ns = 0;
  EXPECT_FALSE(folder.add_bin(1, backwards).repeat);
  EXPECT_FALSE(folder.add_bin(1, bin(4097, 101, 5'000'000)).repeat);  // stored, not a repeat
  auto slow = bin(8193, 201, 9'000'000);
  slow.back().free_ns_delta = kRepeatTimeLimitNs;
  EXPECT_FALSE(folder.add_bin(1, slow).repeat);
  EXPECT_FALSE(folder.add_bin(1, slow).repeat);  // never remembered, so never repeated
}

TEST(RepeatFolderTest, TheStoredBinsStayWithinTheirBudgetLeastRecentlyMatchedGoingFirst) {
  // Room for two bins of 100 allocations.
  RepeatFolder folder(nullptr, 2 * 100 * 14 * sizeof(std::int64_t));
  ASSERT_FALSE(folder.add_bin(1, bin(1, 1, 0, 100, 0x1000)).repeat);
  ASSERT_FALSE(folder.add_bin(1, bin(4097, 101, 4'000'000, 100, 0x2000)).repeat);
  ASSERT_TRUE(folder.add_bin(1, bin(8193, 201, 8'000'000, 100, 0x1000)).repeat);     // A used
  ASSERT_FALSE(folder.add_bin(1, bin(12289, 301, 12'000'000, 100, 0x3000)).repeat);  // B goes
  EXPECT_TRUE(folder.add_bin(1, bin(16385, 401, 16'000'000, 100, 0x1000)).repeat);
  EXPECT_FALSE(folder.add_bin(1, bin(20481, 501, 20'000'000, 100, 0x2000)).repeat);
}

TEST(RepeatFolderTest, ShapesGivenUpGiveTheirMemoryBack) {
  // A program that never repeats: every bin a new shape, far more than the budget holds.
  constexpr std::size_t kBudget = 4 * 100 * 14 * sizeof(std::int64_t);
  RepeatFolder folder(nullptr, kBudget);
  for (int i = 0; i < 200; ++i) {
    const auto b = bin(1 + 4096 * static_cast<std::uint64_t>(i), 1 + 100 * i, 4'000'000LL * i, 100,
                       0x1000 + 0x1000 * static_cast<std::uint64_t>(i));
    ASSERT_FALSE(folder.add_bin(1, b).repeat);
    ASSERT_LE(folder.held_shape_bytes(), kBudget) << "after bin " << i;
  }
  EXPECT_GT(folder.held_shape_bytes(), 0U);
}

TEST(RepeatFolderTest, AStoredBinNotHeldIsReadBackWhenABinMatchesItsHash) {
  // The trace's stored bins, as the packer reads them back.
  std::map<std::uint64_t, std::vector<PackedAllocation>> stored;
  int reads = 0;
  RepeatFolder folder(
      [&](std::int64_t upid, std::uint64_t first, std::vector<PackedAllocation>* out) {
        ++reads;
        if (upid != 1 || !stored.contains(first)) return false;
        *out = stored[first];
        return true;
      },
      2 * 100 * 14 * sizeof(std::int64_t));
  std::uint64_t seq = 1;
  std::int64_t id = 1, ns = 0;
  // Five shapes in turn: more than the budget holds.
  for (int round = 0; round < 3; ++round) {
    for (std::uint64_t address = 0x1000; address <= 0x5000; address += 0x1000) {
      const auto b = bin(seq, id, ns, 100, address);
      const bool repeat = folder.add_bin(1, b).repeat;
      EXPECT_EQ(repeat, round > 0) << round << " " << address;
      if (!repeat) stored[seq] = b;
      seq += 4096;
      id += 100;
      ns += 4'000'000;
    }
  }
  EXPECT_GT(reads, 0);
  EXPECT_EQ(folder.folded_bins(), 10);
  // A stored bin changed behind its back (or a hash shared by another shape) is no match.
  const auto b = bin(seq, id, ns, 100, 0x1000);
  stored[1][5].size = 1;
  RepeatFolder fresh(
      [&](std::int64_t, std::uint64_t first, std::vector<PackedAllocation>* out) {
        *out = stored[first];
        return true;
      },
      0);
  EXPECT_FALSE(fresh.add_bin(1, bin(1, 1, 0, 100, 0x1000)).repeat);
  EXPECT_FALSE(fresh.add_bin(1, b).repeat);
}

TEST(RepeatFolderTest, ABinCutShortIsTheStartOfTheBinItsRunRepeats) {
  RepeatFolder folder;
  ASSERT_FALSE(folder.add_bin(1, bin(1, 1, 0)).repeat);
  ASSERT_TRUE(folder.add_bin(1, bin(4097, 101, 4'000'000)).repeat);
  // The program's last bin: its first 40 allocations.
  const RepeatFolder::Outcome last = folder.add_bin(1, bin(8193, 201, 8'000'000, 40));
  EXPECT_TRUE(last.repeat);
  ASSERT_EQ(last.ended.size(), 1u);
  const ChunkRepeatRun& run = last.ended[0];
  EXPECT_EQ(run.source_first_alloc_seq, 1u);
  EXPECT_EQ(run.count, 40);
  EXPECT_EQ(run.repeats, 1);
  std::vector<PackedAllocation> instance;
  append_repeat_instance(run, 0, bin(1, 1, 0), &instance);
  EXPECT_EQ(instance, bin(8193, 201, 8'000'000, 40));
  // Not the start of it: a bin of its own.
  auto other = bin(12289, 301, 12'000'000, 40);
  other[39].size = 1;
  EXPECT_FALSE(folder.add_bin(1, other).repeat);
  EXPECT_EQ(folder.folded_allocations(), 140);
}

TEST(RepeatTimeTest, ASlowSourceIsSqueezedIntoItsInstanceAndTimesKeepRising) {
  ChunkRepeatRun run;
  run.source_first_alloc_seq = 1;
  run.source_first_id = 1;
  run.source_first_alloc_ns = 0;
  run.source_span_ns = 10'000;
  run.first_alloc_seq = 4097;
  run.seq_step = 4096;
  run.first_id = 11;
  run.id_step = 10;
  run.first_alloc_ns = 100'000;
  run.instance_ns = 5'000;
  run.repeats = 3;
  run.count = 10;
  std::vector<PackedAllocation> source;
  for (int i = 0; i < 10; ++i) {
    PackedAllocation a;
    a.id = 1 + i;
    a.alloc_seq = 1 + 2 * static_cast<std::uint64_t>(i);
    a.alloc_ns = 1000 * i;
    a.free_seq_delta = 1;
    a.free_ns_delta = 1000;
    source.push_back(a);
  }
  std::vector<PackedAllocation> out;
  for (std::int64_t k = 0; k < run.repeats; ++k) append_repeat_instance(run, k, source, &out);
  ASSERT_EQ(out.size(), 30u);
  std::int64_t last = 0;
  for (const PackedAllocation& a : out) {
    EXPECT_GE(a.alloc_ns, last);
    EXPECT_GE(a.free_ns(), a.alloc_ns);
    last = a.free_ns();
  }
  EXPECT_EQ(out[10].alloc_ns, 105'000);  // instance 1 starts an instance_ns later
  EXPECT_EQ(out[11].alloc_ns, 105'500);  // and its times run at half the source's pace
  EXPECT_EQ(out[29].free_ns(), 115'000);
  EXPECT_EQ(out[29].id, 40);
  EXPECT_EQ(out[29].alloc_seq, 4097 + 2 * 4096u + 18);
}

}  // namespace
}  // namespace vramtrace::storage
