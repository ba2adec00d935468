// The hand decoder of Alloc and Free records reads what libprotobuf reads: every message the
// shim can send, in any order of decoding (a field of one record never leaks into the next),
// the encodings a protobuf writer may choose (packed or not), and fields it does not keep.
// Where it answers, on damaged bytes too, it answers as libprotobuf does; where libprotobuf
// refuses, it declines.
#include "collector/hot_record_decoder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace vramtrace::collector {
namespace {

const unsigned char* bytes_of(const std::string& s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

// A value of 0..64 bits, most of them small, as the varints of real records are.
std::uint64_t value(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:
      return 0;
    case 1:
      return rng() % 200;
    case 2:
      return rng() >> (rng() % 64);
    default:
      return rng();
  }
}

// The fields Alloc and Free share, each set or not at random.
template <class Message>
void set_shared_fields(std::mt19937_64& rng, Message& m) {
  const auto maybe = [&] { return rng() % 2 == 0; };
  if (maybe()) m.set_tid(static_cast<std::uint32_t>(value(rng)));
  if (maybe()) m.set_device(static_cast<std::int32_t>(value(rng)));
  if (maybe()) m.set_stream(value(rng));
  if (maybe()) m.set_api(static_cast<wire::Api>(rng() % 40));
  if (maybe()) m.set_address(value(rng));
  if (maybe()) m.set_size(value(rng));
  for (std::uint64_t i = rng() % 3 == 0 ? rng() % 40 : 0; i > 0; --i) m.add_stack(rng());
  if (maybe()) m.set_stack_truncated(true);
  if (maybe()) m.set_allocator_allocated(value(rng));
  if (maybe()) m.set_allocator_reserved(value(rng));
  for (std::uint64_t i = rng() % 3 == 0 ? rng() % 10 : 0; i > 0; --i) {
    m.add_python_code(rng());
    m.add_python_line(static_cast<std::uint32_t>(value(rng)));
  }
  if (maybe()) m.set_python_stack(static_cast<wire::PythonStackStatus>(rng() % 4));
  if (maybe()) m.set_correlation_id(static_cast<std::uint32_t>(value(rng)));
  if (maybe()) m.set_stack_name(static_cast<std::uint32_t>(value(rng)));
  if (maybe()) m.set_same_stack_as(static_cast<std::uint32_t>(value(rng)));
}

wire::Alloc random_alloc(std::mt19937_64& rng) {
  wire::Alloc m;
  set_shared_fields(rng, m);
  const auto maybe = [&] { return rng() % 2 == 0; };
  if (maybe()) m.set_kind(static_cast<wire::Kind>(rng() % 8));
  if (maybe()) m.set_requested_size(value(rng));
  if (maybe()) m.set_result(static_cast<std::int32_t>(value(rng)));
  if (maybe()) m.set_pool(value(rng));
  if (maybe()) m.set_flags(static_cast<std::uint32_t>(value(rng)));
  if (maybe()) m.set_handle(value(rng));
  if (maybe()) m.set_offset(value(rng));
  return m;
}

wire::Free random_free(std::mt19937_64& rng) {
  wire::Free m;
  set_shared_fields(rng, m);
  if (rng() % 2 == 0) m.set_nested(true);
  return m;
}

// What libprotobuf makes of the bytes, without the unknown fields the collector never reads;
// false when it refuses them.
template <class Message>
bool reference_parse(const std::string& bytes, Message* out) {
  out->Clear();
  if (!out->ParseFromString(bytes)) return false;
  out->DiscardUnknownFields();
  return true;
}

TEST(HotRecordDecoderTest, EveryMessageDecodesAsLibprotobufReadsIt) {
  std::mt19937_64 rng(7);
  HotRecordDecoder decoder;
  for (int i = 0; i < 20000; ++i) {
    if (rng() % 2 == 0) {
      const wire::Alloc sent = random_alloc(rng);
      const std::string bytes = sent.SerializeAsString();
      ASSERT_TRUE(decoder.decode_alloc(bytes_of(bytes), static_cast<std::uint32_t>(bytes.size())))
          << sent.DebugString();
      ASSERT_EQ(decoder.alloc().SerializeAsString(), bytes) << sent.DebugString();
    } else {
      const wire::Free sent = random_free(rng);
      const std::string bytes = sent.SerializeAsString();
      ASSERT_TRUE(decoder.decode_free(bytes_of(bytes), static_cast<std::uint32_t>(bytes.size())))
          << sent.DebugString();
      ASSERT_EQ(decoder.free().SerializeAsString(), bytes) << sent.DebugString();
    }
  }
}

TEST(HotRecordDecoderTest, NoFieldOfOneRecordStaysForTheNext) {
  std::mt19937_64 rng(11);
  wire::Alloc full;
  while (full.stack_size() == 0 || !full.has_allocator_allocated() || full.address() == 0)
    full = random_alloc(rng);
  wire::Alloc bare;
  bare.set_size(256);
  HotRecordDecoder decoder;
  const std::string full_bytes = full.SerializeAsString(), bare_bytes = bare.SerializeAsString();
  ASSERT_TRUE(
      decoder.decode_alloc(bytes_of(full_bytes), static_cast<std::uint32_t>(full_bytes.size())));
  ASSERT_TRUE(
      decoder.decode_alloc(bytes_of(bare_bytes), static_cast<std::uint32_t>(bare_bytes.size())));
  EXPECT_EQ(decoder.alloc().stack_size(), 0);
  EXPECT_FALSE(decoder.alloc().has_allocator_allocated());
  EXPECT_EQ(decoder.alloc().address(), 0u);
  EXPECT_EQ(decoder.alloc().SerializeAsString(), bare_bytes);

  // A record declined halfway leaves nothing behind either.
  std::string cut = full_bytes.substr(0, full_bytes.size() - 1);
  wire::Alloc refused;
  if (!refused.ParseFromString(cut)) {
    EXPECT_FALSE(decoder.decode_alloc(bytes_of(cut), static_cast<std::uint32_t>(cut.size())));
    ASSERT_TRUE(
        decoder.decode_alloc(bytes_of(bare_bytes), static_cast<std::uint32_t>(bare_bytes.size())));
    EXPECT_EQ(decoder.alloc().SerializeAsString(), bare_bytes);
  }
}

// Appends a key and a varint, as a protobuf writer lays them out.
void put_varint(std::string* out, std::uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void put_key(std::string* out, int number, int type) {
  put_varint(out, static_cast<std::uint64_t>(number) << 3 | static_cast<unsigned>(type));
}
void put_fixed64(std::string* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

TEST(HotRecordDecoderTest, ReadsUnpackedRepeatsRepeatedScalarsAndSkipsWhatItDoesNotKeep) {
  std::string bytes;
  put_key(&bytes, 12, 1);  // stack, one value at a time
  put_fixed64(&bytes, 0x1111);
  put_key(&bytes, 7, 0);  // size, twice: the last one counts
  put_varint(&bytes, 5);
  put_key(&bytes, 12, 2);  // stack, packed, after: appended
  put_varint(&bytes, 16);
  put_fixed64(&bytes, 0x2222);
  put_fixed64(&bytes, 0x3333);
  put_key(&bytes, 7, 0);
  put_varint(&bytes, 4096);
  put_key(&bytes, 19, 0);  // python_line, unpacked
  put_varint(&bytes, 42);
  put_key(&bytes, 6, 2);  // address in the wrong wire type: an unknown field
  put_varint(&bytes, 3);
  bytes += "abc";
  put_key(&bytes, 99, 5);  // a field from a later shim
  bytes += std::string(4, '\x01');
  put_key(&bytes, 2, 0);  // device -1: ten bytes, read into 32 bits
  put_varint(&bytes, static_cast<std::uint64_t>(-1));

  HotRecordDecoder decoder;
  ASSERT_TRUE(decoder.decode_alloc(bytes_of(bytes), static_cast<std::uint32_t>(bytes.size())));
  wire::Alloc reference;
  ASSERT_TRUE(reference_parse(bytes, &reference));
  EXPECT_EQ(decoder.alloc().SerializeAsString(), reference.SerializeAsString());
  EXPECT_EQ(decoder.alloc().stack_size(), 3);
  EXPECT_EQ(decoder.alloc().stack(2), 0x3333u);
  EXPECT_EQ(decoder.alloc().size(), 4096u);
  EXPECT_EQ(decoder.alloc().address(), 0u);
  EXPECT_EQ(decoder.alloc().device(), -1);
  ASSERT_EQ(decoder.alloc().python_line_size(), 1);

  // Keys and lengths libprotobuf reads from five bytes at most: longer encodings of small
  // values, which it refuses, are declined.
  std::string long_key;
  for (int i = 0; i < 5; ++i) long_key.push_back('\x80' | (i == 0 ? 7 << 3 : 0));
  long_key.push_back('\x00');  // field 7 (size), varint, in six bytes
  put_varint(&long_key, 1);
  wire::Alloc refused;
  ASSERT_FALSE(reference_parse(long_key, &refused));
  EXPECT_FALSE(
      decoder.decode_alloc(bytes_of(long_key), static_cast<std::uint32_t>(long_key.size())));
  std::string long_length;
  put_key(&long_length, 12, 2);
  long_length += std::string("\x88\x80\x80\x80\x80\x00", 6);  // 8, in six bytes
  put_fixed64(&long_length, 1);
  ASSERT_FALSE(reference_parse(long_length, &refused));
  EXPECT_FALSE(
      decoder.decode_alloc(bytes_of(long_length), static_cast<std::uint32_t>(long_length.size())));

  // A group (wire type 3) is left to libprotobuf.
  std::string group;
  put_key(&group, 99, 3);
  put_key(&group, 99, 4);
  EXPECT_FALSE(decoder.decode_alloc(bytes_of(group), static_cast<std::uint32_t>(group.size())));
}

TEST(HotRecordDecoderTest, OnDamagedBytesItAnswersAsLibprotobufOrDeclines) {
  std::mt19937_64 rng(3);
  HotRecordDecoder decoder;
  int agreed = 0;
  for (int i = 0; i < 30000; ++i) {
    const bool alloc = rng() % 2 == 0;
    std::string bytes =
        alloc ? random_alloc(rng).SerializeAsString() : random_free(rng).SerializeAsString();
    if (bytes.empty()) continue;
    for (std::uint64_t damage = 1 + rng() % 3; damage > 0; --damage) {
      switch (rng() % 3) {
        case 0:
          bytes[rng() % bytes.size()] = static_cast<char>(rng());
          break;
        case 1:
          bytes.resize(rng() % bytes.size());
          break;
        default:
          bytes.insert(rng() % (bytes.size() + 1), 1, static_cast<char>(rng()));
          break;
      }
      if (bytes.empty()) break;
    }
    const auto size = static_cast<std::uint32_t>(bytes.size());
    if (alloc) {
      wire::Alloc reference;
      const bool parsed = reference_parse(bytes, &reference);
      if (!decoder.decode_alloc(bytes_of(bytes), size)) continue;
      ASSERT_TRUE(parsed) << "accepted what libprotobuf refuses, case " << i;
      ASSERT_EQ(decoder.alloc().SerializeAsString(), reference.SerializeAsString()) << i;
    } else {
      wire::Free reference;
      const bool parsed = reference_parse(bytes, &reference);
      if (!decoder.decode_free(bytes_of(bytes), size)) continue;
      ASSERT_TRUE(parsed) << "accepted what libprotobuf refuses, case " << i;
      ASSERT_EQ(decoder.free().SerializeAsString(), reference.SerializeAsString()) << i;
    }
    ++agreed;
  }
  // Most damaged records still parse: the comparison ran on many.
  EXPECT_GT(agreed, 5000);
}

}  // namespace
}  // namespace vramtrace::collector
