// PickleWriter's bytes, opcode by opcode, against what Python's unpickler reads (the opcodes of
// Lib/pickletools.py), and the test unpickler (pickle_reader.h) reading them back.
#include "analysis/export/pickle_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>

#include "pickle_reader.h"

namespace vramtrace::testing {
namespace {

using analysis::PickleWriter;
using namespace std::string_literals;

// The pickle of what `write` writes, without the PROTO 2 header and the STOP.
std::string body(const std::function<void(PickleWriter&)>& write) {
  std::ostringstream out;
  PickleWriter writer(out);
  write(writer);
  writer.finish();
  const std::string bytes = out.str();
  EXPECT_EQ(bytes.substr(0, 2), "\x80\x02"s);
  EXPECT_EQ(bytes.back(), '.');
  return bytes.substr(2, bytes.size() - 3);
}

std::string pickle_of(const std::function<void(PickleWriter&)>& write) {
  std::ostringstream out;
  PickleWriter writer(out);
  write(writer);
  writer.finish();
  return out.str();
}

TEST(PickleWriter, WritesProtocolTwoHeaderAndStop) {
  EXPECT_EQ(pickle_of([](PickleWriter& w) { w.none(); }), "\x80\x02N."s);
}

TEST(PickleWriter, SmallIntegersUseBinInt1And2AndBinInt) {
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(0); }), "K\x00"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(255); }), "K\xff"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(256); }), "M\x00\x01"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(65535); }), "M\xff\xff"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(65536); }), "J\x00\x00\x01\x00"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(-1); }), "J\xff\xff\xff\xff"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(std::numeric_limits<std::int32_t>::max()); }),
            "J\xff\xff\xff\x7f"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(std::numeric_limits<std::int32_t>::min()); }),
            "J\x00\x00\x00\x80"s);
}

// Python: pickle.dumps(2**31, 2) == b'\x80\x02\x8a\x05\x00\x00\x00\x80\x00.'
TEST(PickleWriter, IntegersPastInt32UseLong1InFewestBytes) {
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(std::int64_t{1} << 31); }),
            "\x8a\x05\x00\x00\x00\x80\x00"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(-(std::int64_t{1} << 31) - 1); }),
            "\x8a\x05\xff\xff\xff\x7f\xff"s);
  // A device address.
  EXPECT_EQ(body([](PickleWriter& w) { w.unsigned_integer(0x7f1234560000); }),
            "\x8a\x06\x00\x00\x56\x34\x12\x7f"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(std::numeric_limits<std::int64_t>::min()); }),
            "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.integer(std::numeric_limits<std::int64_t>::max()); }),
            "\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f"s);
  // Past int64: nine bytes, the last the sign.
  EXPECT_EQ(body([](PickleWriter& w) { w.unsigned_integer(~std::uint64_t{0}); }),
            "\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.unsigned_integer(7); }), "K\x07"s);
}

TEST(PickleWriter, FloatsAreBigEndianDoubles) {
  EXPECT_EQ(body([](PickleWriter& w) { w.floating(1.5); }), "G\x3f\xf8\x00\x00\x00\x00\x00\x00"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.floating(-2.0); }), "G\xc0\x00\x00\x00\x00\x00\x00\x00"s);
}

TEST(PickleWriter, BooleansAndNone) {
  EXPECT_EQ(body([](PickleWriter& w) {
              w.begin_list();
              w.boolean(true);
              w.boolean(false);
              w.none();
              w.end_list();
            }),
            "](\x88\x89N"
            "e"s);
}

TEST(PickleWriter, StringsAreBinUnicodeUtf8) {
  EXPECT_EQ(body([](PickleWriter& w) { w.string(""); }), "X\x00\x00\x00\x00"s);
  EXPECT_EQ(body([](PickleWriter& w) { w.string("a\xc3\xb1"); }),
            "X\x03\x00\x00\x00"
            "a\xc3\xb1"s);
}

// The unpickler decodes BINUNICODE strictly: a file name that is not UTF-8 must not make the
// whole pickle unreadable.
TEST(PickleWriter, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(body([](PickleWriter& w) { w.string("a\xff"); }),
            "X\x04\x00\x00\x00"
            "a\xef\xbf\xbd"s);
  EXPECT_EQ(analysis::valid_utf8("\xc3"), "\xef\xbf\xbd");                  // cut short
  EXPECT_EQ(analysis::valid_utf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");  // overlong
  EXPECT_EQ(analysis::valid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(analysis::valid_utf8("\xf0\x9f\x98\x80 ok"), "\xf0\x9f\x98\x80 ok");
}

TEST(PickleWriter, ListsDictsAndTuples) {
  // Empty ones: [[], ()]; an empty list closes without APPENDS, a tuple always has its MARK.
  EXPECT_EQ(body([](PickleWriter& w) {
              w.begin_list();
              w.begin_list();
              w.end_list();
              w.begin_tuple();
              w.end_tuple();
              w.end_list();
            }),
            "](](te"s);
  EXPECT_EQ(body([](PickleWriter& w) {
              w.begin_list();
              w.integer(1);
              w.integer(2);
              w.end_list();
            }),
            "](K\x01K\x02"
            "e"s);
  EXPECT_EQ(body([](PickleWriter& w) {
              w.begin_dict();
              w.string("a");
              w.integer(1);
              w.end_dict();
            }),
            "}(X\x01\x00\x00\x00"
            "aK\x01u"s);
  EXPECT_EQ(body([](PickleWriter& w) {
              w.begin_tuple();
              w.integer(0);
              w.none();
              w.end_tuple();
            }),
            "(K\x00Nt"s);
  // Nested: [{}, [3]]
  EXPECT_EQ(body([](PickleWriter& w) {
              w.begin_list();
              w.begin_dict();
              w.end_dict();
              w.begin_list();
              w.integer(3);
              w.end_list();
              w.end_list();
            }),
            "](}](K\x03"
            "ee"s);
}

// As Python's pickler: APPENDS after every 1000 items, a new MARK for the rest.
TEST(PickleWriter, LongListsAreAppendedInBatchesOfAThousand) {
  const std::string bytes = body([](PickleWriter& w) {
    w.begin_list();
    for (int i = 0; i < 1001; ++i) w.integer(0);
    w.end_list();
  });
  std::string expected = "](";
  for (int i = 0; i < 1000; ++i) expected += "K\x00"s;
  expected +=
      "e(K\x00"
      "e"s;
  EXPECT_EQ(bytes, expected);
}

TEST(PickleWriter, MemoRecallsTheSameObject) {
  EXPECT_EQ(body([](PickleWriter& w) {
              w.begin_list();
              w.interned("k");
              w.interned("k");
              w.end_list();
            }),
            "](X\x01\x00\x00\x00kq\x00h\x00"
            "e"s);
  // Past 255 memo entries: LONG_BINPUT and LONG_BINGET, a 4-byte index.
  const std::string bytes = body([](PickleWriter& w) {
    w.begin_list();
    for (int i = 0; i < 257; ++i) {
      w.string(std::to_string(i));
      w.remember();
    }
    w.recall(256);
    w.recall(3);
    w.end_list();
  });
  EXPECT_NE(bytes.find("r\x00\x01\x00\x00"s), std::string::npos);
  EXPECT_EQ(bytes.substr(bytes.size() - 8),
            "j\x00\x01\x00\x00h\x03"
            "e"s);
}

TEST(PickleWriter, ReadsBackAsWritten) {
  const std::string bytes = pickle_of([](PickleWriter& w) {
    w.begin_dict();
    w.interned("segments");
    w.begin_list();
    for (int i = 0; i < 2500; ++i) {
      w.begin_dict();
      w.interned("address");
      w.unsigned_integer(0x7f0000000000 + static_cast<std::uint64_t>(i) * 512);
      w.interned("frames");
      w.begin_list();
      w.end_list();
      w.end_dict();
    }
    w.end_list();
    w.interned("pool");
    w.begin_tuple();
    w.integer(-5);
    w.floating(0.25);
    w.end_tuple();
    w.end_dict();
  });
  const auto root = unpickle(bytes);
  const PickleList& segments = root->at("segments").list();
  ASSERT_EQ(segments.size(), 2500u);
  EXPECT_EQ(segments[2499]->at("address").unsigned_integer(), 0x7f0000000000u + 2499u * 512u);
  EXPECT_TRUE(segments[7]->at("frames").list().empty());
  const auto& pool = std::get<PickleTuple>(root->at("pool").value).items;
  ASSERT_EQ(pool.size(), 2u);
  EXPECT_EQ(pool[0]->integer(), -5);
  EXPECT_EQ(std::get<double>(pool[1]->value), 0.25);
}

TEST(PickleWriter, RefusesUnbalancedContainers) {
  std::ostringstream out;
  PickleWriter writer(out);
  writer.begin_dict();
  writer.string("key");
  EXPECT_THROW(writer.end_dict(), std::logic_error);
  writer.integer(1);
  EXPECT_THROW(writer.end_list(), std::logic_error);
  EXPECT_THROW(writer.finish(), std::logic_error);
  EXPECT_THROW(writer.recall(0), std::logic_error);
  writer.end_dict();
  writer.finish();
}

}  // namespace
}  // namespace vramtrace::testing
