// The bounded tables behind NVTX's domain and string handles: past their bounds nothing
// fails, the extra entries share an "overflow" entry, and the trace is told once. A binary of
// its own: filling the tables would change what other tests see.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "fake_nvtx.h"
#include "nvtx_registry.h"
#include "test_ring.h"

namespace vramtrace::testing {
namespace {

using wire::Marker;

std::vector<wire::Notice> notices(const std::vector<wire::Envelope>& records) {
  std::vector<wire::Notice> out;
  for (const auto& env : records)
    if (env.body_case() == wire::Envelope::kNotice) out.push_back(env.notice());
  return out;
}

std::string marker_domain(const std::vector<wire::Envelope>& records) {
  for (const auto& env : records)
    if (env.body_case() == wire::Envelope::kMarker) return env.marker().domain();
  return "(no marker)";
}

TEST(NvtxOverflow, DomainsPastTheTableShareTheOverflowDomain) {
  TestRing& ring = TestRing::get();
  FakeNvtx nvtx;
  ASSERT_EQ(nvtx.initialize(), 1);
  ring.drain();

  std::vector<nvtx::DomainHandle> handles;
  for (size_t i = 0; i + 1 < preload::kMaxNvtxDomains; ++i)
    handles.push_back(nvtx.DomainCreateA(("domain." + std::to_string(i)).c_str()));
  EXPECT_EQ(std::set<nvtx::DomainHandle>(handles.begin(), handles.end()).size(), handles.size());
  EXPECT_TRUE(notices(ring.drain()).empty());

  nvtx::DomainHandle first_extra = nvtx.DomainCreateA("one too many");
  nvtx::DomainHandle second_extra = nvtx.DomainCreateW(L"two too many");
  EXPECT_EQ(first_extra, second_extra);
  EXPECT_EQ(std::set<nvtx::DomainHandle>(handles.begin(), handles.end()).count(first_extra), 0u);
  auto said = notices(ring.drain());
  ASSERT_EQ(said.size(), 1u);  // once, however many more
  EXPECT_EQ(said[0].severity(), wire::Notice::SEVERITY_DATA_LOSS);
  EXPECT_EQ(said[0].name(), "nvtx_domains_full");

  // The table still works for the domains it holds, and the extras record as "overflow".
  EXPECT_EQ(nvtx.DomainCreateA("domain.7"), handles[7]);
  nvtx.DomainMarkEx(handles[7], nullptr);
  EXPECT_EQ(marker_domain(ring.drain()), "domain.7");
  nvtx.DomainMarkEx(second_extra, nullptr);
  EXPECT_EQ(marker_domain(ring.drain()), "overflow");
  // Their ranges nest together, apart from the others'.
  EXPECT_EQ(nvtx.DomainRangePushEx(first_extra, nullptr), 0);
  EXPECT_EQ(nvtx.DomainRangePushEx(second_extra, nullptr), 1);
  EXPECT_EQ(nvtx.DomainRangePushEx(handles[7], nullptr), 0);
  EXPECT_EQ(nvtx.DomainRangePop(handles[7]), 0);
  EXPECT_EQ(nvtx.DomainRangePop(first_extra), 1);
  EXPECT_EQ(nvtx.DomainRangePop(second_extra), 0);
}

// Runs `body` in a child process with tables of its own; the child says what went wrong.
template <class Body>
void in_child(Body body) {
  EXPECT_EXIT(
      {
        std::string why = body();
        if (!why.empty()) std::fprintf(stderr, "%s\n", why.c_str());
        _exit(why.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

std::string registered_name(FakeNvtx& nvtx, TestRing& ring, nvtx::StringHandle s) {
  nvtx::EventAttributes a{};
  a.size = sizeof a;
  a.messageType = nvtx::kMessageRegistered;
  a.message.registered = s;
  nvtx.MarkEx(&a);
  for (const auto& env : ring.drain())
    if (env.body_case() == wire::Envelope::kMarker) return env.marker().name();
  return "(no marker)";
}

std::string fill_strings(size_t bytes_each, size_t expected_to_fit) {
  TestRing& ring = TestRing::get();
  FakeNvtx nvtx;
  if (nvtx.initialize() != 1) return "initialize failed";
  ring.drain();
  std::vector<nvtx::StringHandle> kept;
  for (size_t i = 0; i < expected_to_fit; ++i) {
    std::string text = std::to_string(i);
    text.resize(bytes_each, '.');
    kept.push_back(nvtx.DomainRegisterStringA(nullptr, text.c_str()));
  }
  if (std::set<nvtx::StringHandle>(kept.begin(), kept.end()).size() != expected_to_fit)
    return "distinct strings did not get distinct handles";
  if (!notices(ring.drain()).empty()) return "a notice before the table was full";
  nvtx::StringHandle extra = nvtx.DomainRegisterStringA(nullptr, "extra");
  nvtx::StringHandle extra2 = nvtx.DomainRegisterStringW(nullptr, L"extra 2");
  if (extra != extra2) return "the extra strings do not share the overflow entry";
  auto said = notices(ring.drain());
  if (said.size() != 1 || said[0].name() != "nvtx_strings_full")
    return "expected one nvtx_strings_full notice, got " + std::to_string(said.size());
  if (registered_name(nvtx, ring, extra) != "overflow") return "the overflow text is wrong";
  std::string first = "0";
  first.resize(bytes_each, '.');
  if (registered_name(nvtx, ring, kept[0]) != first) return "a kept string lost its text";
  if (nvtx.DomainRegisterStringA(nullptr, first.c_str()) != kept[0])
    return "a kept string is no longer found";
  return "";
}

TEST(NvtxOverflowDeathTest, StringsPastTheCountShareTheOverflowEntry) {
  in_child([] { return fill_strings(8, preload::kMaxRegisteredStrings); });
}

TEST(NvtxOverflowDeathTest, StringsPastTheBytesShareTheOverflowEntry) {
  // 255 bytes and a NUL each: the bytes run out before the count.
  in_child([] { return fill_strings(255, preload::kRegisteredStringBytes / 256); });
}

}  // namespace
}  // namespace vramtrace::testing
