// `vramtrace timeline` as a user runs it, on the allocator trace (tests/unit/allocator_trace.h):
// min, max and last per bucket, worked out from the trace's table, the chart, and the errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "allocator_trace.h"
#include "run_vramtrace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;
constexpr std::uint64_t M = 1024 * 1024, K = 1024;

class CliTimelineTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_allocator_trace(trace_), ""); }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "allocator.db";
};

// The trace's allocations and frees run from 1001 ms to 1013 ms (seq 1 to 13 of upid 1, 1 ms
// apart). Four buckets of 3 ms: events of seq 1-3, 4-6 (5, 6, 7 for the device: 7 lies in the
// second), 7-9 and 10-13. A bucket starts from the value before it, so a bucket's min is the
// lowest it went and its last what it ended at.
TEST_F(CliTimelineTest, JsonKeepsMinMaxAndLastPerBucket) {
  const CommandResult result = run_vramtrace(
      {"timeline", trace_.string(), "--buckets", "4", "--format", "json"}, scratch_.path());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["start_ns"], 1'001'000'000);
  EXPECT_EQ(doc["end_ns"], 1'013'000'000);
  // Bucket edges fall on the index's fine buckets: 11719 of 1024 ns (storage's
  // live_bytes_bucket_shift), from the one holding 1001 ms; the 4 coarse ones start at fine
  // buckets 0, 2930, 5860 and 8790 (the first clipped to the trace's start).
  EXPECT_EQ(doc["bucket_start_ns"], json({1'001'000'000, (977'539 + 2930) * 1024,
                                          (977'539 + 5860) * 1024, (977'539 + 8790) * 1024}));
  ASSERT_EQ(doc["series"].size(), 3u);
  const json& device = doc["series"][0];
  EXPECT_EQ(device["pid"], 5000);
  EXPECT_EQ(device["kind"], "device");
  EXPECT_EQ(device["level"], "segment");
  EXPECT_EQ(device["peak_bytes"], 6 * M);
  // S1 at 1; S2 at 7 (second bucket: 7 - 1 = 6 ms < 6.000001); S2 freed at 11, R1 12, R2 13.
  EXPECT_EQ(device["min"], json({0, 2 * M, 6 * M, 2 * M}));
  EXPECT_EQ(device["max"], json({2 * M, 6 * M, 6 * M, 6 * M}));
  EXPECT_EQ(device["last"], json({2 * M, 6 * M, 6 * M, 4 * M}));
  const json& blocks = doc["series"][1];
  EXPECT_EQ(blocks["kind"], "block");
  EXPECT_EQ(blocks["level"], "block");
  // B1 + B2 by 3; B3 at 5, B1 freed at 6; B4 at 8, freed at 10 (the third bucket).
  EXPECT_EQ(blocks["min"], json({0, 1280 * K, 1280 * K, 1280 * K}));
  EXPECT_EQ(blocks["max"], json({1536 * K, 1792 * K, 4352 * K, 1280 * K}));
  EXPECT_EQ(blocks["last"], json({1536 * K, 1280 * K, 1280 * K, 1280 * K}));
  const json& other = doc["series"][2];
  EXPECT_EQ(other["pid"], 5001);
  EXPECT_EQ(other["device"], 1);
  EXPECT_EQ(other["last"], json({8 * M, 8 * M, 8 * M, 8 * M}));
}

TEST_F(CliTimelineTest, TextDrawsOneChartPerSeries) {
  const CommandResult result = run_vramtrace(
      {"timeline", trace_.string(), "--buckets", "8", "--pid", "5000"}, scratch_.path());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out,
            "vramtrace: live bytes over 12.000 ms in " + trace_.string() +
                ", only processes matching --pid 5000 (1 of 2) (8 buckets, each bucket's max)\n"
                "\n"
                "pid 5000 device 0 device (segment level): peak 6.0 MiB, at the end 4.0 MiB\n"
                "   6.0 MiB |   ████ \n"
                "           |   ████▅\n"
                "           |▃▃▃█████\n"
                "       0 B |████████\n"
                "           +--------\n"
                "            0 s 12.000 ms\n"
                "\n"
                "pid 5000 device 0 block (block level): peak 4.2 MiB, at the end 1.2 MiB\n"
                "   4.2 MiB |    ██  \n"
                "           |    ██  \n"
                "           | ▃▅▅██▁▁\n"
                "       0 B |▄███████\n"
                "           +--------\n"
                "            0 s 12.000 ms\n");
}

TEST_F(CliTimelineTest, BucketsOutOfRangeAreAUsageError) {
  for (const std::string buckets : {"0", "16385", "many"}) {
    const CommandResult result =
        run_vramtrace({"timeline", trace_.string(), "--buckets", buckets}, scratch_.path());
    EXPECT_EQ(result.exit_status, 2) << buckets;
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
  }
  const CommandResult no_match =
      run_vramtrace({"timeline", trace_.string(), "--rank", "9"}, scratch_.path());
  EXPECT_EQ(no_match.exit_status, 2);
  EXPECT_EQ(no_match.err.rfind("vramtrace timeline: ", 0), 0u) << no_match.err;
}

}  // namespace
}  // namespace vramtrace::testing

namespace vramtrace::testing {
namespace {

using nlohmann::json;

// "pid/device/kind"" of a timeline series.
std::string fmt_series(const nlohmann::json& series) {
  return std::to_string(series["pid"].get<int>()) + "/" +
         std::to_string(series["device"].get<int>()) + "/" + series["kind"].get<std::string>();
}

// --device, --kind and --level select series, and --format csv gives a row per series and
// bucket; peak keeps the selected device's and level's peaks; frag lays out one device.
class CliTimeFiltersTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_allocator_trace(trace_), ""); }
  CommandResult run(std::vector<std::string> args) {
    args.insert(args.begin() + 1, trace_.string());
    return run_vramtrace(args, scratch_.path());
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "allocator.db";
};

TEST_F(CliTimeFiltersTest, TimelineSeriesAreSelectedByDeviceKindAndLevel) {
  const auto series_of = [&](std::vector<std::string> filter) {
    std::vector<std::string> args{"timeline", "--buckets", "2", "--format", "json"};
    args.insert(args.end(), filter.begin(), filter.end());
    const CommandResult result = run(args);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    std::vector<std::string> names;
    const json doc = json::parse(result.out);
    for (const json& series : doc["series"]) names.push_back(fmt_series(series));
    return names;
  };
  EXPECT_EQ(series_of({"--device", "1"}), std::vector<std::string>{"5001/1/device"});
  EXPECT_EQ(series_of({"--kind", "block"}), std::vector<std::string>{"5000/0/block"});
  EXPECT_EQ(series_of({"--level", "segment"}),
            (std::vector<std::string>{"5000/0/device", "5001/1/device"}));
}

TEST_F(CliTimeFiltersTest, TimelineCsvHasARowPerSeriesAndBucket) {
  const CommandResult result =
      run({"timeline", "--buckets", "2", "--format", "csv", "--device", "1"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out,
            "upid,pid,device,kind,level,start_ns,end_ns,min_bytes,max_bytes,last_bytes\r\n"
            // R3 comes at the first event: the first bucket starts from 0.
            // The second starts at fine bucket 5860 of 1024 ns after 977539 * 1024.
            "2,5001,1,device,segment,1001000000,1007000576,0,8388608,8388608\r\n"
            "2,5001,1,device,segment,1007000576,1013000001,8388608,8388608,8388608\r\n");
}

TEST_F(CliTimeFiltersTest, PeakKeepsTheSelectedDeviceAndLevel) {
  const auto peaks_of = [&](std::vector<std::string> filter) {
    std::vector<std::string> args{"peak", "--format", "json"};
    args.insert(args.end(), filter.begin(), filter.end());
    const CommandResult result = run(args);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    std::vector<std::string> peaks;
    const json doc = json::parse(result.out);
    for (const json& peak : doc["peaks"])
      peaks.push_back(std::to_string(peak["device"].get<int>()) + "/" +
                      peak["level"].get<std::string>() + "/" +
                      std::to_string(peak["bytes"].get<std::uint64_t>()));
    return peaks;
  };
  EXPECT_EQ(peaks_of({"--device", "1"}), std::vector<std::string>{"1/device_memory/8388608"});
  EXPECT_EQ(peaks_of({"--level", "block"}), std::vector<std::string>{"0/blocks/4456448"});
  const CommandResult kind = run({"peak", "--kind", "block"});
  EXPECT_EQ(kind.exit_status, 2);
  EXPECT_EQ(kind.err, "vramtrace peak: peak takes no --kind\n");
}

TEST_F(CliTimeFiltersTest, PeakCsvHasARowPerAllocatingFrame) {
  const CommandResult result = run({"peak", "--format", "csv", "--level", "block"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  // The blocks' peak (4.25 MiB after seq 8): B4 from backward (3 MiB), B2 from backward (1 MiB),
  // B3 from forward (256 KiB).
  EXPECT_EQ(result.out,
            "upid,pid,device,level,peak_bytes,seq,time_ns,function,file,line,bytes,count\r\n"
            "1,5000,0,blocks,4456448,8,1008000000,backward,train.py,8,4194304,2\r\n"
            "1,5000,0,blocks,4456448,8,1008000000,forward,model.py,10,262144,1\r\n");
}

TEST_F(CliTimeFiltersTest, FragLaysOutOneDeviceAndWritesABlockPerRow) {
  const CommandResult csv = run({"frag", "--at", "end", "--format", "csv", "--device", "0"});
  ASSERT_EQ(csv.exit_status, 0) << csv.err;
  // At the end S1 holds B2 (1 MiB, requested 1 MiB) and B3 (256 KiB, requested 200 KiB); its
  // first 512 KiB (B1's) and its tail are free.
  EXPECT_EQ(csv.out,
            "device,segment_address,segment_size,address,size,requested,state\r\n"
            "0,268435456,2097152,268435456,524288,,free\r\n"
            "0,268435456,2097152,268959744,1048576,1048576,used\r\n"
            "0,268435456,2097152,270008320,262144,204800,used\r\n"
            "0,268435456,2097152,270270464,262144,,free\r\n");
  const CommandResult other = run({"frag", "--at", "end", "--format", "json", "--device", "1"});
  ASSERT_EQ(other.exit_status, 0) << other.err;
  EXPECT_EQ(json::parse(other.out)["segments"].size(), 0u);
  EXPECT_EQ(run({"frag", "--level", "block"}).exit_status, 2);
}

}  // namespace
}  // namespace vramtrace::testing
