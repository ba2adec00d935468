// encode_marker (nanopb primitives) against libprotobuf's decoder.
#include <gtest/gtest.h>

#include <string>

#include "vramtrace.pb.h"  // libprotobuf's
#include "wire_encoder.h"

namespace vramtrace {
namespace {

TEST(MarkerWire, EveryFieldRoundTripsAtItsLimits) {
  const std::string name(255, 'n');
  const std::string domain(255, 'd');
  preload::MarkerEvent e{};
  e.tid = 0xffffffffu;
  e.type = wire::Marker::TYPE_RANGE_END;
  e.source = wire::Marker::SOURCE_API;
  e.domain = domain.c_str();
  e.name = name.c_str();
  e.range_id = ~uint64_t{0};
  e.color = 0xffffffffu;
  e.category = 0xfffffffeu;
  uint8_t buf[1024];
  const size_t n = preload::encode_marker(e, buf, sizeof buf);
  ASSERT_GT(n, 0u);
  wire::Envelope env;
  ASSERT_TRUE(env.ParseFromArray(buf, static_cast<int>(n)));
  ASSERT_EQ(env.body_case(), wire::Envelope::kMarker);
  const wire::Marker& m = env.marker();
  EXPECT_EQ(m.tid(), 0xffffffffu);
  EXPECT_EQ(m.type(), wire::Marker::TYPE_RANGE_END);
  EXPECT_EQ(m.source(), wire::Marker::SOURCE_API);
  EXPECT_EQ(m.domain(), domain);
  EXPECT_EQ(m.name(), name);
  EXPECT_EQ(m.range_id(), ~uint64_t{0});
  EXPECT_EQ(m.color(), 0xffffffffu);
  EXPECT_EQ(m.category(), 0xfffffffeu);
  // Sized exactly: no room to spare, and one byte less does not fit.
  EXPECT_EQ(preload::encode_marker(e, buf, n), n);
  EXPECT_EQ(preload::encode_marker(e, buf, n - 1), 0u);
}

TEST(MarkerWire, DefaultsAndNullStringsEncodeAsEmpty) {
  preload::MarkerEvent e{};
  uint8_t buf[64];
  const size_t n = preload::encode_marker(e, buf, sizeof buf);
  ASSERT_EQ(n, 2u);  // the Envelope's tag and an empty body
  wire::Envelope env;
  ASSERT_TRUE(env.ParseFromArray(buf, static_cast<int>(n)));
  ASSERT_EQ(env.body_case(), wire::Envelope::kMarker);
  EXPECT_EQ(env.marker().type(), wire::Marker::TYPE_MARK);
  EXPECT_EQ(env.marker().source(), wire::Marker::SOURCE_NVTX);
  EXPECT_EQ(env.marker().name(), "");
  EXPECT_EQ(env.marker().domain(), "");
}

}  // namespace
}  // namespace vramtrace
