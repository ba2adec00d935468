// simcuda's internals, compiled into the test: the range allocator and the arena built on it,
// size parsing, the reading of SIMCUDA_* variables, the runtime's reading of driver results,
// and the MD2 behind the driver's integrity check.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "arena.h"
#include "config.h"
#include "cuda.h"
#include "error_translation.h"
#include "integrity_check.h"
#include "range_allocator.h"
#include "size_parse.h"

namespace {

using simcuda::Arena;
using simcuda::parse_size;
using simcuda::RangeAllocator;

constexpr std::size_t kMiB = std::size_t{1} << 20;

static_assert(parse_size("512") == 512);
static_assert(parse_size("16GiB") == std::uint64_t{16} << 30);
static_assert(!parse_size("1.5G"));

TEST(ParseSize, AcceptsBytesAndBinaryUnits) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("1048576"), kMiB);
  EXPECT_EQ(parse_size("1K"), 1024u);
  EXPECT_EQ(parse_size("1KiB"), 1024u);
  EXPECT_EQ(parse_size("512M"), 512 * kMiB);
  EXPECT_EQ(parse_size("512mib"), 512 * kMiB);
  EXPECT_EQ(parse_size("2G"), 2048 * kMiB);
  EXPECT_EQ(parse_size(" 16 GiB "), std::uint64_t{16} << 30);
  EXPECT_EQ(parse_size("1T"), std::uint64_t{1} << 40);
  EXPECT_EQ(parse_size("100B"), 100u);
}

TEST(ParseSize, RejectsEverythingElse) {
  for (const char* text : {"", "GiB", "-1", "1.5G", "12 MB", "1KB", "1X", "0x100", "1 G B",
                           "99999999999999999999", "17179869184T"}) {
    EXPECT_FALSE(parse_size(text)) << "'" << text << "'";
  }
}

// Scoped SIMCUDA_* variables for the config tests.
class Environment : public testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name :
         {"SIMCUDA_DEVICE_COUNT", "SIMCUDA_DEVICE_MEMORY", "SIMCUDA_NO_DEVICE"}) {
      unsetenv(name);
    }
  }
};

TEST_F(Environment, DefaultsToTwoDevicesOf16GiB) {
  const simcuda::ConfigResult result = simcuda::read_config_from_environment();
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(result.config.device_count, 2);
  EXPECT_EQ(result.config.device_memory, std::size_t{16} << 30);
  EXPECT_FALSE(result.config.no_device);
}

TEST_F(Environment, ReadsEveryVariable) {
  setenv("SIMCUDA_DEVICE_COUNT", "5", 1);
  setenv("SIMCUDA_DEVICE_MEMORY", "1000", 1);  // rounded down to whole 512-byte units
  setenv("SIMCUDA_NO_DEVICE", "1", 1);
  const simcuda::ConfigResult result = simcuda::read_config_from_environment();
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(result.config.device_count, 5);
  EXPECT_EQ(result.config.device_memory, 512u);
  EXPECT_TRUE(result.config.no_device);
}

TEST_F(Environment, EmptyMeansUnset) {
  setenv("SIMCUDA_DEVICE_COUNT", "", 1);
  EXPECT_EQ(simcuda::read_config_from_environment().config.device_count, 2);
}

TEST_F(Environment, ReportsMalformedValues) {
  const std::pair<const char*, const char*> bad[] = {
      {"SIMCUDA_DEVICE_COUNT", "two"},    {"SIMCUDA_DEVICE_COUNT", "65"},
      {"SIMCUDA_DEVICE_COUNT", "-1"},     {"SIMCUDA_DEVICE_MEMORY", "100"},
      {"SIMCUDA_DEVICE_MEMORY", "16 GB"}, {"SIMCUDA_NO_DEVICE", "yes"}};
  for (const auto& [name, value] : bad) {
    clear();
    setenv(name, value, 1);
    const std::string error = simcuda::read_config_from_environment().error;
    EXPECT_NE(error.find(name), std::string::npos) << name << "=" << value << ": " << error;
  }
}

TEST(Arena, RoundsUpToWholeUnits) {
  EXPECT_EQ(Arena::round_up(0), 0u);
  EXPECT_EQ(Arena::round_up(1), 512u);
  EXPECT_EQ(Arena::round_up(512), 512u);
  EXPECT_EQ(Arena::round_up(513), 1024u);
  EXPECT_FALSE(Arena::round_up(SIZE_MAX - 10));
}

TEST(Arena, AllocatesAlignedRangesUntilFull) {
  Arena arena(4 * kMiB);
  ASSERT_TRUE(arena.reserved());
  std::vector<std::byte*> blocks;
  while (std::byte* block = arena.allocate(kMiB)) {
    EXPECT_TRUE(arena.contains(block));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block) % Arena::kAlignment, 0u);
    blocks.push_back(block);
  }
  EXPECT_EQ(blocks.size(), 4u);
  EXPECT_EQ(arena.used(), 4 * kMiB);
  EXPECT_EQ(arena.free_range_count(), 0u);
  for (std::byte* block : blocks) arena.release(block, kMiB);
  EXPECT_EQ(arena.used(), 0u);
}

TEST(Arena, ReleasedRangesMergeWithBothNeighbours) {
  Arena arena(8 * kMiB);
  ASSERT_TRUE(arena.reserved());
  std::byte* blocks[8];
  for (std::byte*& block : blocks) block = arena.allocate(kMiB);
  arena.release(blocks[1], kMiB);
  arena.release(blocks[3], kMiB);
  EXPECT_EQ(arena.free_range_count(), 2u);
  arena.release(blocks[2], kMiB);  // joins 1 and 3
  EXPECT_EQ(arena.free_range_count(), 1u);
  EXPECT_EQ(arena.largest_free_range(), 3 * kMiB);
  EXPECT_EQ(arena.allocate(3 * kMiB), blocks[1]);
}

TEST(Arena, GivesFreedPagesBackToTheKernel) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  Arena arena(4 * kMiB);
  ASSERT_TRUE(arena.reserved());
  std::byte* block = arena.allocate(kMiB);
  std::byte* neighbour = arena.allocate(512);
  for (std::size_t i = 0; i < kMiB; ++i) block[i] = std::byte{1};
  neighbour[0] = std::byte{2};

  const auto resident_pages = [page](std::byte* start, std::size_t bytes) {
    std::vector<unsigned char> residency((bytes + page - 1) / page);
    EXPECT_EQ(mincore(start, bytes, residency.data()), 0);
    std::size_t resident = 0;
    for (const unsigned char r : residency) resident += r & 1;
    return resident;
  };
  EXPECT_EQ(resident_pages(block, kMiB), kMiB / page);
  arena.release(block, kMiB);
  EXPECT_EQ(resident_pages(block, kMiB), 0u);
  // The neighbour's page is shared with nothing freed, and it keeps its bytes.
  EXPECT_EQ(neighbour[0], std::byte{2});
}

TEST(RangeAllocator, AlignsTheAddressAnOffsetStandsFor) {
  // The origin is the address of offset 0: alignment is of origin + offset.
  RangeAllocator ranges(0x1000, 64 * kMiB);
  const auto first = ranges.allocate(4096);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, 0u);
  const auto aligned = ranges.allocate(kMiB, 2 * kMiB);
  ASSERT_TRUE(aligned);
  EXPECT_EQ((0x1000 + *aligned) % (2 * kMiB), 0u);
  // The padding before the aligned range stays free, and is used.
  EXPECT_EQ(ranges.free_range_count(), 2u);
  const auto small = ranges.allocate(4096);
  ASSERT_TRUE(small);
  EXPECT_EQ(*small, 4096u);
  EXPECT_FALSE(ranges.allocate(128 * kMiB));
  EXPECT_EQ(ranges.used(), kMiB + 2 * 4096);
}

TEST(RangeAllocator, PlacesAtAnOffsetOnlyWhereAllOfItIsFree) {
  RangeAllocator ranges(0, 16 * kMiB);
  EXPECT_TRUE(ranges.allocate_at(4 * kMiB, kMiB));
  EXPECT_FALSE(ranges.allocate_at(4 * kMiB, kMiB)) << "taken";
  EXPECT_FALSE(ranges.allocate_at(3 * kMiB, 2 * kMiB)) << "overlaps";
  EXPECT_FALSE(ranges.allocate_at(15 * kMiB, 2 * kMiB)) << "past the end";
  EXPECT_TRUE(ranges.allocate_at(3 * kMiB, kMiB)) << "right before";
  const RangeAllocator::Range freed = ranges.release(4 * kMiB, kMiB);
  EXPECT_EQ(freed.begin, 4 * kMiB);
  EXPECT_EQ(freed.end, 16 * kMiB) << "merged with the free rest";
  EXPECT_EQ(ranges.release(3 * kMiB, kMiB).begin, 0u);
  EXPECT_EQ(ranges.free_range_count(), 1u);
}

// CUresult and cudaError_t share their numbering; what has no runtime counterpart is unknown.
TEST(ErrorTranslation, KeepsTheNumberOfCodesTheRuntimeKnows) {
  using simcuda::runtime::from_driver;
  EXPECT_EQ(from_driver(CUDA_SUCCESS), cudaSuccess);
  EXPECT_EQ(from_driver(CUDA_ERROR_OUT_OF_MEMORY), cudaErrorMemoryAllocation);
  EXPECT_EQ(from_driver(CUDA_ERROR_NOT_INITIALIZED), cudaErrorInitializationError);
  EXPECT_EQ(from_driver(CUDA_ERROR_DEINITIALIZED), cudaErrorCudartUnloading);
  EXPECT_EQ(from_driver(CUDA_ERROR_NO_DEVICE), cudaErrorNoDevice);
  EXPECT_EQ(from_driver(CUDA_ERROR_INVALID_DEVICE), cudaErrorInvalidDevice);
  EXPECT_EQ(from_driver(CUDA_ERROR_INVALID_CONTEXT), cudaErrorDeviceUninitialized);
  EXPECT_EQ(from_driver(CUDA_ERROR_CONTEXT_IS_DESTROYED), cudaErrorContextIsDestroyed);
  EXPECT_EQ(from_driver(CUDA_ERROR_INVALID_HANDLE), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(from_driver(CUDA_ERROR_NOT_FOUND), cudaErrorSymbolNotFound);
  EXPECT_EQ(from_driver(CUDA_ERROR_NOT_SUPPORTED), cudaErrorNotSupported);
  EXPECT_EQ(from_driver(CUDA_ERROR_STUB_LIBRARY), cudaErrorStubLibrary);
  EXPECT_EQ(from_driver(CUDA_ERROR_UNKNOWN), cudaErrorUnknown);
  EXPECT_EQ(from_driver(CUDA_ERROR_CONTEXT_ALREADY_CURRENT), cudaErrorUnknown);
  EXPECT_EQ(from_driver(CUDA_ERROR_KEY_ROTATION), cudaErrorUnknown);
  EXPECT_EQ(from_driver(static_cast<CUresult>(123456)), cudaErrorUnknown);
  EXPECT_EQ(from_driver(static_cast<CUresult>(-1)), cudaErrorUnknown);
}

}  // namespace

namespace {

std::string md2_hex(const std::string& message) {
  simcuda::driver::Md2 md2;
  md2.update(message.data(), message.size());
  std::string hex;
  for (const std::uint8_t byte : md2.finish()) {
    static const char kDigits[] = "0123456789abcdef";
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 0xf];
  }
  return hex;
}

// RFC 1319's test suite.
TEST(Md2, GivesTheDigestsOfRfc1319) {
  EXPECT_EQ(md2_hex(""), "8350e5a3e24c153df2275c9f80692773");
  EXPECT_EQ(md2_hex("a"), "32ec01ec4a6dac72c0ab96fb34c0b5d1");
  EXPECT_EQ(md2_hex("abc"), "da853b0d3f88d99b30283a69e6ded6bb");
  EXPECT_EQ(md2_hex("message digest"), "ab4f496bfb2a530b219ff33031fe06b0");
  EXPECT_EQ(md2_hex("abcdefghijklmnopqrstuvwxyz"), "4e8ddff3650292ab5a4108c3aa47940b");
  EXPECT_EQ(md2_hex("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
            "da33def2a42df13975352846c30338cd");
  EXPECT_EQ(md2_hex("1234567890123456789012345678901234567890123456789012345678901234567890"
                    "1234567890"),
            "d5976f79d83d3a0dc9806c3c66f3efd8");
}

// The answers for caller versions ending in 0 and 1 are constants; the others depend on every
// input.
TEST(IntegrityCheck, DependsOnEveryInputButForTheConstantVersions) {
  simcuda::driver::IntegrityInputs inputs{13000, 13000, 1, 2, nullptr, nullptr, nullptr, 3, {}};
  const auto constant = simcuda::driver::integrity_value(inputs);
  inputs.process = 99;
  EXPECT_EQ(simcuda::driver::integrity_value(inputs), constant);
  inputs.caller_version = 13002;
  const auto hashed = simcuda::driver::integrity_value(inputs);
  EXPECT_NE(hashed, constant);
  inputs.unix_seconds = 4;
  EXPECT_NE(simcuda::driver::integrity_value(inputs), hashed);
  inputs.unix_seconds = 3;
  EXPECT_EQ(simcuda::driver::integrity_value(inputs), hashed);
  inputs.devices.push_back(simcuda::driver::DeviceIdentity{{}, 0, 1, 0});
  EXPECT_NE(simcuda::driver::integrity_value(inputs), hashed);
}

}  // namespace
