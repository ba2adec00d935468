// The shim's nanopb encoders against libprotobuf's decoder: one schema, two implementations.
#include <gtest/gtest.h>

#include <algorithm>

#include <string>

#include "vramtrace.pb.h"  // libprotobuf's (the test links vramtrace_wire_cpp)
#include "wire_encoder.h"

namespace vramtrace {
namespace {

wire::Envelope decode(const uint8_t* buf, size_t n) {
  wire::Envelope env;
  EXPECT_TRUE(env.ParseFromArray(buf, static_cast<int>(n)));
  return env;
}

TEST(Wire, AllocationWithAFullStackRoundTrips) {
  preload::AllocEvent e{};
  e.tid = 4242;
  e.device = 3;
  e.stream = 0x7f0000001000;
  e.kind = wire::KIND_ASYNC;
  e.api = wire::API_CUDA_MALLOC_FROM_POOL_ASYNC;
  e.address = 0x7f12345600;
  e.size = 1 << 20;
  e.requested_size = 1000000;
  e.result = 0;
  e.pool = 0xdeadbeef;
  e.flags = 7;
  e.vmm_handle = 0x1234;
  e.vmm_offset = 2 << 20;
  std::vector<uintptr_t> ips(preload::kMaxStackDepth);
  for (size_t i = 0; i < ips.size(); ++i) ips[i] = 0x7fff00000000 + i * 17;
  uint8_t buf[preload::kMaxEventBytes];
  size_t n =
      preload::encode_alloc(e, {ips.data(), static_cast<int>(ips.size()), true}, buf, sizeof buf);
  ASSERT_GT(n, 0u);
  wire::Envelope env = decode(buf, n);
  ASSERT_EQ(env.body_case(), wire::Envelope::kAlloc);
  const wire::Alloc& a = env.alloc();
  EXPECT_EQ(a.tid(), 4242u);
  EXPECT_EQ(a.device(), 3);
  EXPECT_EQ(a.stream(), 0x7f0000001000u);
  EXPECT_EQ(a.kind(), wire::KIND_ASYNC);
  EXPECT_EQ(a.api(), wire::API_CUDA_MALLOC_FROM_POOL_ASYNC);
  EXPECT_EQ(a.address(), 0x7f12345600u);
  EXPECT_EQ(a.size(), 1u << 20);
  EXPECT_EQ(a.requested_size(), 1000000u);
  EXPECT_EQ(a.pool(), 0xdeadbeefu);
  EXPECT_EQ(a.flags(), 7u);
  EXPECT_EQ(a.handle(), 0x1234u);
  EXPECT_EQ(a.offset(), 2u << 20);
  ASSERT_EQ(a.stack_size(), preload::kMaxStackDepth);
  for (int i = 0; i < a.stack_size(); ++i) EXPECT_EQ(a.stack(i), ips[static_cast<size_t>(i)]);
  EXPECT_TRUE(a.stack_truncated());
}

TEST(Wire, PythonFramesRideAlongAFullNativeStackInOneEvent) {
  preload::AllocEvent e{};
  e.kind = wire::KIND_BLOCK;
  e.api = wire::API_C10_REPORT_MEMORY_USAGE;
  e.address = 0x7f0000000000;
  std::vector<uintptr_t> ips(preload::kMaxStackDepth, 0x7fff00001234);
  preload::PythonFrames python;
  python.depth = preload::kMaxPythonDepth;
  python.status = preload::PythonStackStatus::kTruncated;
  for (int i = 0; i < python.depth; ++i) {
    python.code[i] = 0x7f5500000000 + static_cast<uint64_t>(i) * 0x40;
    python.line[i] = 100000 + static_cast<uint32_t>(i);  // three-byte varints
  }
  uint8_t buf[preload::kMaxEventBytes];
  // Named, with the largest name: a definition carries its name beside every frame.
  const size_t n = preload::encode_alloc(
      e, {ips.data(), static_cast<int>(ips.size()), false, &python, 0xffffffffu}, buf, sizeof buf);
  ASSERT_GT(n, 0u) << "the deepest event must fit in kMaxEventBytes";
  const wire::Alloc a = decode(buf, n).alloc();
  EXPECT_EQ(a.stack_size(), preload::kMaxStackDepth);
  ASSERT_EQ(a.python_code_size(), preload::kMaxPythonDepth);
  ASSERT_EQ(a.python_line_size(), preload::kMaxPythonDepth);
  for (int i = 0; i < preload::kMaxPythonDepth; ++i) {
    EXPECT_EQ(a.python_code(i), python.code[i]);
    EXPECT_EQ(a.python_line(i), python.line[i]);
  }
  EXPECT_EQ(a.python_stack(), wire::PYTHON_STACK_TRUNCATED);

  preload::FreeEvent f{};
  f.address = 0x7f0000000000;
  python.depth = 2;
  python.status = preload::PythonStackStatus::kCaptured;
  const wire::Free fr =
      decode(buf, preload::encode_free(f, {ips.data(), 3, false, &python}, buf, sizeof buf)).free();
  ASSERT_EQ(fr.python_code_size(), 2);
  EXPECT_EQ(fr.python_code(1), python.code[1]);
  EXPECT_EQ(fr.python_line(1), python.line[1]);
  EXPECT_EQ(fr.python_stack(), wire::PYTHON_STACK_CAPTURED);
}

// A stack's definition carries its frames and its name; a use of the name carries no frame,
// native or Python, but still says whether this event's stack was cut and what became of its
// Python frames. The three messages with stacks encode names alike.
TEST(Wire, ANamedStackIsSentOnceWithItsFramesThenByItsName) {
  const std::vector<uintptr_t> ips = {0x401000, 0x402000, 0x403000};
  preload::PythonFrames python;
  python.depth = 1;
  python.code[0] = 0x7f5500000040;
  python.line[0] = 42;
  python.status = preload::PythonStackStatus::kCaptured;
  preload::AllocEvent e{};
  e.address = 0x7f0000000000;
  uint8_t buf[preload::kMaxEventBytes];

  const wire::Alloc defined =
      decode(buf, preload::encode_alloc(e, {ips.data(), 3, true, &python, 77, 0}, buf, sizeof buf))
          .alloc();
  EXPECT_EQ(defined.stack_name(), 77u);
  EXPECT_EQ(defined.same_stack_as(), 0u);
  EXPECT_EQ(defined.stack_size(), 3);
  EXPECT_EQ(defined.python_code_size(), 1);
  EXPECT_TRUE(defined.stack_truncated());

  const wire::Alloc used =
      decode(buf, preload::encode_alloc(e, {ips.data(), 3, true, &python, 0, 77}, buf, sizeof buf))
          .alloc();
  EXPECT_EQ(used.stack_name(), 0u);
  EXPECT_EQ(used.same_stack_as(), 77u);
  EXPECT_EQ(used.stack_size(), 0);
  EXPECT_EQ(used.python_code_size(), 0);
  EXPECT_EQ(used.python_line_size(), 0);
  EXPECT_TRUE(used.stack_truncated());
  EXPECT_EQ(used.python_stack(), wire::PYTHON_STACK_CAPTURED);
  EXPECT_EQ(used.address(), 0x7f0000000000u);

  preload::FreeEvent f{};
  f.address = 0x7f0000000000;
  const wire::Free free_used =
      decode(buf, preload::encode_free(f, {ips.data(), 3, false, &python, 0, 78}, buf, sizeof buf))
          .free();
  EXPECT_EQ(free_used.same_stack_as(), 78u);
  EXPECT_EQ(free_used.stack_size(), 0);
  EXPECT_EQ(free_used.python_stack(), wire::PYTHON_STACK_CAPTURED);
  const wire::FreeFailed failed_defined =
      decode(buf, preload::encode_free_failed(9, 1, {ips.data(), 3, false, nullptr, 79, 0}, buf,
                                              sizeof buf))
          .free_failed();
  EXPECT_EQ(failed_defined.stack_name(), 79u);
  EXPECT_EQ(failed_defined.stack_size(), 3);
  const wire::FreeFailed failed_used =
      decode(buf, preload::encode_free_failed(9, 1, {ips.data(), 3, false, nullptr, 0, 79}, buf,
                                              sizeof buf))
          .free_failed();
  EXPECT_EQ(failed_used.same_stack_as(), 79u);
  EXPECT_EQ(failed_used.stack_size(), 0);
}

TEST(Wire, PythonCodeAndInterpreterRoundTrip) {
  uint8_t buf[4096];
  const wire::Envelope code = decode(
      buf,
      preload::encode_python_code(0xabc0, "/w/train.py", "Model.forward", 42, buf, sizeof buf));
  ASSERT_EQ(code.body_case(), wire::Envelope::kPythonCode);
  EXPECT_EQ(code.python_code().id(), 0xabc0u);
  EXPECT_EQ(code.python_code().filename(), "/w/train.py");
  EXPECT_EQ(code.python_code().name(), "Model.forward");
  EXPECT_EQ(code.python_code().first_line(), 42u);
  const wire::Envelope interpreter =
      decode(buf, preload::encode_python_interpreter(0x7f00, "3.11.7 (main)", buf, sizeof buf));
  ASSERT_EQ(interpreter.body_case(), wire::Envelope::kPythonInterpreter);
  EXPECT_EQ(interpreter.python_interpreter().api_address(), 0x7f00u);
  EXPECT_EQ(interpreter.python_interpreter().version(), "3.11.7 (main)");
}

TEST(Wire, DeeperStackIsCutAndMarked) {
  std::vector<uintptr_t> ips(preload::kMaxStackDepth + 10, 0x1000);
  preload::FreeEvent e{};
  e.address = 0x10;
  e.size = 4 << 20;
  uint8_t buf[preload::kMaxEventBytes];
  size_t n =
      preload::encode_free(e, {ips.data(), static_cast<int>(ips.size()), false}, buf, sizeof buf);
  wire::Envelope env = decode(buf, n);
  ASSERT_EQ(env.body_case(), wire::Envelope::kFree);
  EXPECT_EQ(env.free().stack_size(), preload::kMaxStackDepth);
  EXPECT_TRUE(env.free().stack_truncated());
  EXPECT_EQ(env.free().address(), 0x10u);
  EXPECT_EQ(env.free().size(), 4u << 20);
}

TEST(Wire, FailedAllocationKeepsItsNegativeAndPositiveCodes) {
  preload::AllocEvent e{};
  e.result = 2;
  e.device = -1;
  uint8_t buf[256];
  wire::Envelope env = decode(buf, preload::encode_alloc(e, {nullptr, 0, false}, buf, sizeof buf));
  EXPECT_EQ(env.alloc().result(), 2);
  EXPECT_EQ(env.alloc().device(), -1);
  EXPECT_EQ(env.alloc().address(), 0u);
}

// A free's device goes only where the hook knows it (a block's free, device 0 included); a
// cudaFree does not ask, and its free then carries no device field at all, rather than -1 in
// eleven bytes.
TEST(Wire, AFreeCarriesItsDeviceOnlyWhereKnown) {
  preload::FreeEvent e{};
  e.tid = 7;
  e.address = 0x7f0000000000;
  e.device = -1;
  uint8_t unknown[64];
  const size_t unknown_bytes =
      preload::encode_free(e, {nullptr, 0, false}, unknown, sizeof unknown);
  wire::Envelope env = decode(unknown, unknown_bytes);
  EXPECT_FALSE(env.free().has_device());
  EXPECT_EQ(env.free().address(), 0x7f0000000000u);
  e.device = 0;
  uint8_t known[64];
  const size_t known_bytes = preload::encode_free(e, {nullptr, 0, false}, known, sizeof known);
  env = decode(known, known_bytes);
  ASSERT_TRUE(env.free().has_device());
  EXPECT_EQ(env.free().device(), 0);
  EXPECT_EQ(known_bytes, unknown_bytes + 2);  // the field's key and its one-byte value
}

// The fields most allocations carry keep their records short: a requested size only where it
// is not the size, and the name of a stack sent before under a one-byte key.
TEST(Wire, AnAllocationSendsItsRequestedSizeOnlyWhereItDiffers) {
  preload::AllocEvent e{};
  e.tid = 7;
  e.address = 0x7f0000000000;
  e.size = 1 << 20;
  e.requested_size = e.size;
  uint8_t same[64];
  const size_t same_bytes =
      preload::encode_alloc(e, {nullptr, 0, false, nullptr, 0, 3}, same, sizeof same);
  wire::Envelope env = decode(same, same_bytes);
  EXPECT_FALSE(env.alloc().has_requested_size());
  EXPECT_EQ(env.alloc().same_stack_as(), 3u);
  // tid, address, size and the stack's name, each a one-byte key and its value; the Envelope's
  // key and length around them.
  EXPECT_EQ(same_bytes, 2u + 2 + 8 + 4 + 2);
  e.requested_size = 1000;
  uint8_t other[64];
  env = decode(other, preload::encode_alloc(e, {nullptr, 0, false}, other, sizeof other));
  ASSERT_TRUE(env.alloc().has_requested_size());
  EXPECT_EQ(env.alloc().requested_size(), 1000u);
}

TEST(Wire, ModuleProcessAndControlMessagesRoundTrip) {
  uint8_t buf[8192];
  const unsigned char id[20] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3};
  preload::ModuleInfo m{0x400000, 0x500000, 0x3ff000, "/usr/lib/libfoo.so", id, 20};
  wire::Envelope env = decode(buf, preload::encode_module(m, buf, sizeof buf));
  ASSERT_EQ(env.body_case(), wire::Envelope::kModule);
  EXPECT_EQ(env.module().start(), 0x400000u);
  EXPECT_EQ(env.module().end(), 0x500000u);
  EXPECT_EQ(env.module().load_bias(), 0x3ff000u);
  EXPECT_EQ(env.module().path(), "/usr/lib/libfoo.so");
  EXPECT_EQ(env.module().build_id(), std::string(reinterpret_cast<const char*>(id), 20));

  const char argv[] = "python\0train.py\0--epochs=3";
  preload::ProcessStartInfo p{7,    1,           1000,     123456789,  "/usr/bin/python3.11",
                              argv, sizeof argv, "node17", "libunwind"};
  env = decode(buf, preload::encode_process_start(p, buf, sizeof buf));
  ASSERT_EQ(env.body_case(), wire::Envelope::kProcessStart);
  const auto& s = env.process_start();
  EXPECT_EQ(s.pid(), 7u);
  EXPECT_EQ(s.ppid(), 1u);
  EXPECT_EQ(s.uid(), 1000u);
  EXPECT_EQ(s.start_realtime_ns(), 123456789u);
  EXPECT_EQ(s.exe(), "/usr/bin/python3.11");
  ASSERT_EQ(s.argv_size(), 3);
  EXPECT_EQ(s.argv(0), "python");
  EXPECT_EQ(s.argv(1), "train.py");
  EXPECT_EQ(s.argv(2), "--epochs=3");
  EXPECT_EQ(s.hostname(), "node17");
  EXPECT_EQ(s.unwinder(), "libunwind");
  EXPECT_FALSE(s.argv_cut());
  p.argv_cut = true;  // arguments past what the shim reads were left out
  env = decode(buf, preload::encode_process_start(p, buf, sizeof buf));
  EXPECT_TRUE(env.process_start().argv_cut());
  EXPECT_EQ(env.process_start().argv_size(), 3);

  env = decode(buf, preload::encode_free_failed(99, 1, preload::Stack{}, buf, sizeof buf));
  EXPECT_EQ(env.free_failed().free_seq(), 99u);
  EXPECT_EQ(env.free_failed().result(), 1);
  EXPECT_EQ(env.free_failed().stack_size(), 0);
  // The failed call's stack, when its free went without one.
  const uintptr_t failed_ips[] = {0x7f0000001000, 0x7f0000002000};
  env = decode(buf, preload::encode_free_failed(99, 1, preload::Stack{failed_ips, 2, true}, buf,
                                                sizeof buf));
  EXPECT_EQ(env.free_failed().free_seq(), 99u);
  ASSERT_EQ(env.free_failed().stack_size(), 2);
  EXPECT_EQ(env.free_failed().stack(1), 0x7f0000002000u);
  EXPECT_TRUE(env.free_failed().stack_truncated());
  env = decode(buf, preload::encode_process_exit(3, buf, sizeof buf));
  EXPECT_EQ(env.process_exit().exit_status(), 3);
  env = decode(buf, preload::encode_notice(1, "unwinder_missing", "no unwinder", buf, sizeof buf));
  EXPECT_EQ(env.notice().severity(), wire::Notice::SEVERITY_DATA_LOSS);
  EXPECT_EQ(env.notice().name(), "unwinder_missing");
  EXPECT_EQ(env.notice().count(), 0u);  // once
  env = decode(
      buf, preload::encode_notice(0, "native_stack_by_libunwind", "counted", buf, sizeof buf, 41));
  EXPECT_EQ(env.notice().count(), 41u);
  env = decode(buf, preload::encode_thread_name(7, "pt_autograd_0", buf, sizeof buf));
  ASSERT_EQ(env.body_case(), wire::Envelope::kThreadName);
  EXPECT_EQ(env.thread_name().tid(), 7u);
  EXPECT_EQ(env.thread_name().name(), "pt_autograd_0");
}

TEST(Wire, TooSmallABufferIsReportedNotOverrun) {
  std::vector<uintptr_t> ips(64, 0x7fff00001234);
  preload::AllocEvent e{};
  uint8_t buf[64 + 16];
  std::memset(buf, 0xab, sizeof buf);
  EXPECT_EQ(preload::encode_alloc(e, {ips.data(), 64, false}, buf, 64), 0u);
  for (size_t i = 64; i < sizeof buf; ++i) EXPECT_EQ(buf[i], 0xab);
}

// An event fits a buffer of exactly its size and not one byte less, whether the Envelope's length
// of its body takes one byte or two (a body of 128 bytes or more), and nothing past it is written.
TEST(Wire, AnEventFitsABufferOfExactlyItsSize) {
  std::vector<uintptr_t> ips(20, 0x7fff00001234);
  preload::AllocEvent e{};
  e.address = 0x7f0000000000;
  e.size = 4096;
  e.requested_size = 4096;
  for (const int depth : {1, 20}) {  // a body of under 128 bytes, and of more
    uint8_t big[preload::kMaxEventBytes];
    const size_t bytes = preload::encode_alloc(e, {ips.data(), depth, false}, big, sizeof big);
    ASSERT_GT(bytes, 0u);
    EXPECT_EQ(big[1] >= 0x80, depth == 20) << "the length takes two bytes only past 127";
    std::vector<uint8_t> exact(bytes + 8, 0xab);
    EXPECT_EQ(preload::encode_alloc(e, {ips.data(), depth, false}, exact.data(), bytes), bytes);
    EXPECT_TRUE(std::equal(big, big + bytes, exact.begin()));
    for (size_t i = bytes; i < exact.size(); ++i) EXPECT_EQ(exact[i], 0xab);
    EXPECT_EQ(preload::encode_alloc(e, {ips.data(), depth, false}, exact.data(), bytes - 1), 0u);
    EXPECT_EQ(decode(big, bytes).alloc().stack_size(), depth);
  }
}

}  // namespace
}  // namespace vramtrace
