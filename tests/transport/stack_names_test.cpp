// The shim's stack names (preload/stack_names.h), read as the collector reads them: a name's
// meaning is the stack of its latest definition, and every use of a name must mean the stack
// the event really had.
#include "stack_names.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "frame_rule_cache.h"

namespace vramtrace::preload {
namespace {

struct Frames {
  std::vector<uintptr_t> ips;
  std::vector<uint64_t> codes;
  std::vector<uint32_t> lines;
  bool operator==(const Frames&) const = default;
};

// The collector's side: what each name stands for, from the definitions seen so far.
class NameReader {
 public:
  // Names `frames` as the shim would send them and returns the frames the collector would take
  // the event to have: its own, on a definition; the definition's, on a use of a name.
  Frames send(const Frames& frames) {
    PythonFrames python;
    python.depth = static_cast<int>(frames.codes.size());
    for (size_t i = 0; i < frames.codes.size(); ++i) {
      python.code[i] = frames.codes[i];
      python.line[i] = frames.lines[i];
    }
    const StackName n = name_stack(frames.ips.data(), static_cast<int>(frames.ips.size()),
                                   frames.codes.empty() ? nullptr : &python);
    EXPECT_FALSE(n.name != 0 && n.same_as != 0);
    if (n.same_as != 0) {
      ++uses;
      auto known = meaning.find(n.same_as);
      if (known == meaning.end()) {
        ADD_FAILURE() << "name " << n.same_as << " used before it was defined";
        return {};
      }
      return known->second;
    }
    if (n.name != 0) {
      ++definitions;
      meaning[n.name] = frames;
    }
    return frames;
  }

  std::map<uint32_t, Frames> meaning;
  int definitions = 0, uses = 0;
};

Frames native(std::initializer_list<uintptr_t> ips) {
  return {ips, {}, {}};
}

class StackNames : public ::testing::Test {
 protected:
  void SetUp() override {
    set_stack_names_enabled(true);
    // Names from earlier tests on this thread do not carry into this one.
    forget_stack_names_after_fork();
  }
};

TEST_F(StackNames, AStackIsDefinedOnceThenUsedByName) {
  NameReader reader;
  const Frames a = native({0x401000, 0x402000, 0x403000});
  const Frames b = native({0x401000, 0x402000, 0x403008});
  EXPECT_EQ(reader.send(a), a);
  EXPECT_EQ(reader.send(b), b);
  EXPECT_EQ(reader.send(a), a);
  EXPECT_EQ(reader.send(b), b);
  EXPECT_EQ(reader.send(a), a);
  EXPECT_EQ(reader.definitions, 2);
  EXPECT_EQ(reader.uses, 3);
}

// A prefix, a longer stack, the same addresses in another order, and Python frames that differ
// only in a line or only in being there are all other stacks.
TEST_F(StackNames, StacksThatDifferAnywhereHaveTheirOwnNames) {
  NameReader reader;
  const std::vector<Frames> stacks = {
      native({0x401000, 0x402000}),
      native({0x401000, 0x402000, 0x403000}),
      native({0x402000, 0x401000}),
      {{0x401000, 0x402000}, {0x7f0000000040}, {10}},
      {{0x401000, 0x402000}, {0x7f0000000040}, {11}},
      {{0x401000, 0x402000}, {0x7f0000000080}, {10}},
      {{}, {0x7f0000000040}, {10}},
  };
  for (int round = 0; round < 3; ++round)
    for (const Frames& f : stacks) EXPECT_EQ(reader.send(f), f);
  EXPECT_EQ(reader.definitions, static_cast<int>(stacks.size()));
  EXPECT_EQ(reader.uses, 2 * static_cast<int>(stacks.size()));
}

TEST_F(StackNames, AnEmptyStackIsNotNamedAndNamingCanBeTurnedOff) {
  EXPECT_EQ(name_stack(nullptr, 0, nullptr).name, 0u);
  EXPECT_EQ(name_stack(nullptr, 0, nullptr).same_as, 0u);
  const uintptr_t ips[] = {0x401000};
  set_stack_names_enabled(false);
  for (int i = 0; i < 2; ++i) {
    const StackName n = name_stack(ips, 1, nullptr);
    EXPECT_EQ(n.name, 0u);
    EXPECT_EQ(n.same_as, 0u);
  }
  set_stack_names_enabled(true);
  EXPECT_NE(name_stack(ips, 1, nullptr).name, 0u);
  EXPECT_NE(name_stack(ips, 1, nullptr).same_as, 0u);
}

// A stack whose walk has the id of the stack named last is that stack (stack_names.h): its name
// comes without a look at its frames, so frames given under the same id name as the first
// ones did. Not after the names' epoch moved, and never for a stack with Python frames, which
// the walk did not see.
TEST_F(StackNames, AStackKnownByItsWalkIdIsNamedWithoutItsFrames) {
  const uintptr_t a[] = {0x401000, 0x402000, 0x403000};
  const uintptr_t b[] = {0x501000, 0x502000, 0x503000};
  const StackName first = name_stack(a, 3, nullptr, 7);
  ASSERT_NE(first.name, 0u);
  EXPECT_EQ(name_stack(a, 3, nullptr, 7).same_as, first.name);
  // Shown with frames that are not the walk's: the id alone names them.
  EXPECT_EQ(name_stack(b, 3, nullptr, 7).same_as, first.name);
  // Another id: the frames are hashed, and b is a stack of its own.
  const StackName other = name_stack(b, 3, nullptr, 8);
  EXPECT_NE(other.name, 0u);
  EXPECT_NE(other.name, first.name);
  // Python frames make another stack, whatever the walk's id.
  EXPECT_EQ(name_stack(a, 3, nullptr, 9).same_as, first.name);
  PythonFrames python;
  python.depth = 1;
  python.code[0] = 0x7f0000000040;
  python.line[0] = 10;
  const StackName with_python = name_stack(a, 3, &python, 9);
  EXPECT_NE(with_python.name, 0u);
  EXPECT_NE(with_python.name, first.name);
  // Unloads make every name new: the id no longer names anything.
  EXPECT_EQ(name_stack(a, 3, nullptr, 10).same_as, first.name);
  forget_frame_rules();
  EXPECT_NE(name_stack(a, 3, nullptr, 10).name, 0u);
}

// After objects are unloaded another may take their addresses, and a forked child's trace is
// another process's: either way a known stack is defined again before its name is used.
TEST_F(StackNames, UnloadsAndForksMakeEveryStackNewAgain) {
  const uintptr_t ips[] = {0x401000, 0x402000};
  EXPECT_NE(name_stack(ips, 2, nullptr).name, 0u);
  EXPECT_NE(name_stack(ips, 2, nullptr).same_as, 0u);
  forget_frame_rules();
  EXPECT_NE(name_stack(ips, 2, nullptr).name, 0u);
  EXPECT_NE(name_stack(ips, 2, nullptr).same_as, 0u);
  forget_stack_names_after_fork();
  EXPECT_NE(name_stack(ips, 2, nullptr).name, 0u);
  EXPECT_NE(name_stack(ips, 2, nullptr).same_as, 0u);
}

// Many more stacks than a table holds, met in a random order: some are evicted and defined
// again under a name that meant another stack before; every use still means the right one.
TEST_F(StackNames, EveryUseMeansItsStackWhenTheTableOverflows) {
  std::mt19937_64 random(20261130);
  std::vector<Frames> stacks(12000);
  for (Frames& f : stacks) {
    f.ips.resize(1 + random() % 24);
    for (uintptr_t& ip : f.ips) ip = 0x400000 + (random() % 64) * 0x10;  // few distinct frames
    if (random() % 4 == 0) {
      f.codes = {0x7f0000000000 + (random() % 8) * 0x40};
      f.lines = {static_cast<uint32_t>(random() % 5)};
    }
  }
  NameReader reader;
  for (int i = 0; i < 200000; ++i) {
    // Mostly a hot few hundred, as a training loop; sometimes any of them.
    const Frames& f = stacks[random() % 8 != 0 ? random() % 300 : random() % stacks.size()];
    ASSERT_EQ(reader.send(f), f) << "event " << i;
  }
  EXPECT_GT(reader.uses, 150000);
  // Names were given to other stacks when their slots were taken.
  EXPECT_GT(reader.definitions, 4096);
}

// A thread that exits gives its table to the next thread, names and all: the next thread's
// uses of them still mean the stacks the first one defined (earlier in the ring).
TEST_F(StackNames, ThreadsTakeTheTablesOfThreadsThatExited) {
  const uintptr_t ips[] = {0x401000, 0x402000, 0x403000};
  StackName first, second;
  std::thread([&] { first = name_stack(ips, 3, nullptr); }).join();
  const int tables = stack_name_tables_for_testing();
  std::thread([&] { second = name_stack(ips, 3, nullptr); }).join();
  EXPECT_EQ(stack_name_tables_for_testing(), tables);
  EXPECT_NE(first.name, 0u);
  EXPECT_EQ(second.same_as, first.name);

  // Two threads at once have two tables, so two names for one stack.
  std::vector<StackName> seen(2);
  std::atomic<int> arrived{0};
  auto both = [&](int i) {
    seen[static_cast<size_t>(i)] = name_stack(ips, 3, nullptr);
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();  // neither exits before both named
  };
  std::thread t2(both, 0), t3(both, 1);
  t2.join();
  t3.join();
  const uint32_t name0 = seen[0].name != 0 ? seen[0].name : seen[0].same_as;
  const uint32_t name1 = seen[1].name != 0 ? seen[1].name : seen[1].same_as;
  EXPECT_NE(name0, name1);
  EXPECT_GE(stack_name_tables_for_testing(), tables + 1);
}

}  // namespace
}  // namespace vramtrace::preload
