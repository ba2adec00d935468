// Python frames from wire records to stored stacks: TraceIngest puts an event's Python frames
// in place of the interpreter's native frames (collector/python_splice.h), names them from the
// PythonCode records, marks them "python", and counts the events that could not have them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collector/python_splice.h"
#include "ingest_harness.h"
#include "vramtrace.pb.h"

namespace vramtrace {
namespace {

// Three objects: an allocating library, the interpreter (libpython), and the C library. None
// exists on disk, so native frames stay unsymbolized and are told apart by module.
constexpr uint64_t kLibrary = 0x10000000, kInterpreter = 0x20000000, kLibc = 0x30000000;
constexpr uint64_t kCodeTrain = 0xa000, kCodeModule = 0xb000;

class PythonStackIngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    module(kLibrary, "/opt/lib/liballoc.so");
    module(kInterpreter, "/usr/lib/libpython3.11.so.1.0");
    module(kLibc, "/lib/libc.so.6");
  }
  void module(uint64_t start, const std::string& path) { harness_.feed_module(start, path); }
  void interpreter() {
    wire::Envelope e;
    e.mutable_python_interpreter()->set_api_address(kInterpreter + 0x500);
    e.mutable_python_interpreter()->set_version("3.11.7");
    harness_.feed(e);
  }
  void code(uint64_t id, const std::string& name, const std::string& file) {
    wire::Envelope e;
    auto* c = e.mutable_python_code();
    c->set_id(id);
    c->set_name(name);
    c->set_filename(file);
    c->set_first_line(1);
    harness_.feed(e);
  }
  // An allocation whose native stack (innermost first) is `ips`, with Python frames
  // (code, line), innermost first.
  void alloc(uint64_t address, const std::vector<uint64_t>& ips,
             const std::vector<std::pair<uint64_t, uint32_t>>& python,
             wire::PythonStackStatus status = wire::PYTHON_STACK_CAPTURED) {
    wire::Envelope e = testing_support::IngestHarness::cuda_malloc(address, 512, ips);
    auto* a = e.mutable_alloc();
    for (const auto& [id, line] : python) {
      a->add_python_code(id);
      a->add_python_line(line);
    }
    a->set_python_stack(status);
    harness_.feed(e);
  }
  // "module-basename:function@line" per frame of the stack of live allocation `address`.
  std::vector<std::string> stack_of(uint64_t address) {
    std::vector<std::string> out;
    for (const auto& a : harness_.reader().allocations({})) {
      if (a.allocation.address != address) continue;
      for (const storage::StackFrame& f : harness_.reader().stack(a.allocation.alloc_callsite_id)) {
        const std::string language(storage::frame_language_name(f.language));
        if (f.language == storage::FrameLanguage::kPython) {
          out.push_back(language + ":" + f.function.value_or("?") + "@" + f.file.value_or("?") +
                        ":" + std::to_string(f.line.value_or(0)));
        } else {
          out.push_back(language + ":" + f.module);
        }
      }
    }
    return out;
  }

  testing_support::IngestHarness harness_;
};

TEST_F(PythonStackIngestTest, PythonFramesTakeThePlaceOfTheInterpretersFrames) {
  interpreter();
  code(kCodeTrain, "train", "/work/train.py");
  code(kCodeModule, "<module>", "/work/train.py");
  // liballoc, liballoc, then libpython x3 (with libc between two of them), then libc (start-up).
  alloc(0x1000,
        {kLibrary + 0x10, kLibrary + 0x20, kInterpreter + 0x30, kLibc + 0x40, kInterpreter + 0x50,
         kLibc + 0x60},
        {{kCodeTrain, 12}, {kCodeModule, 30}});
  harness_.finish();
  EXPECT_EQ(stack_of(0x1000), (std::vector<std::string>{
                                  "native:/opt/lib/liballoc.so", "native:/opt/lib/liballoc.so",
                                  "python:train@/work/train.py:12",
                                  "python:<module>@/work/train.py:30", "native:/lib/libc.so.6"}));
}

TEST_F(PythonStackIngestTest, TheSameNativeStackWithOtherPythonLinesIsAnotherCallsite) {
  interpreter();
  code(kCodeTrain, "train", "/work/train.py");
  const std::vector<uint64_t> ips{kLibrary + 0x10, kInterpreter + 0x30};
  alloc(0x1000, ips, {{kCodeTrain, 12}});
  alloc(0x2000, ips, {{kCodeTrain, 13}});
  alloc(0x3000, ips, {{kCodeTrain, 12}});
  harness_.finish();
  EXPECT_EQ(stack_of(0x1000).back(), "python:train@/work/train.py:12");
  EXPECT_EQ(stack_of(0x2000).back(), "python:train@/work/train.py:13");
  std::vector<int64_t> callsites;
  for (const auto& a : harness_.reader().allocations({}))
    callsites.push_back(*a.allocation.alloc_callsite_id);
  ASSERT_EQ(callsites.size(), 3u);
  EXPECT_NE(callsites[0], callsites[1]);
  EXPECT_EQ(callsites[0], callsites[2]);
}

TEST_F(PythonStackIngestTest, WithoutAnInterpreterFrameThePythonFramesGoOutermost) {
  interpreter();
  code(kCodeTrain, "train", "/work/train.py");
  alloc(0x1000, {kLibrary + 0x10}, {{kCodeTrain, 12}});
  alloc(0x2000, {}, {{kCodeTrain, 14}});  // no native stack at all (no unwinder)
  harness_.finish();
  EXPECT_EQ(stack_of(0x1000), (std::vector<std::string>{"native:/opt/lib/liballoc.so",
                                                        "python:train@/work/train.py:12"}));
  EXPECT_EQ(stack_of(0x2000), (std::vector<std::string>{"python:train@/work/train.py:14"}));
}

TEST_F(PythonStackIngestTest, UnannouncedCodeIsKeptNamelessAndCounted) {
  interpreter();
  alloc(0x1000, {kLibrary + 0x10, kInterpreter + 0x30}, {{0xdead, 7}});
  harness_.finish();
  EXPECT_EQ(stack_of(0x1000),
            (std::vector<std::string>{"native:/opt/lib/liballoc.so", "python:?@?:7"}));
  EXPECT_EQ(harness_.stat("python_code_unknown"), 1);
}

TEST_F(PythonStackIngestTest, EventsWithoutPythonFramesAreCountedByReason) {
  interpreter();
  alloc(0x1000, {kLibrary + 0x10, kInterpreter + 0x30}, {}, wire::PYTHON_STACK_WITHOUT_GIL);
  alloc(0x2000, {kLibrary + 0x10, kInterpreter + 0x30}, {}, wire::PYTHON_STACK_WITHOUT_GIL);
  alloc(0x3000, {kLibrary + 0x10}, {}, wire::PYTHON_STACK_UNAVAILABLE);
  harness_.finish();
  // Native only: the interpreter's frames stay when there is nothing to put in their place.
  EXPECT_EQ(stack_of(0x1000), (std::vector<std::string>{"native:/opt/lib/liballoc.so",
                                                        "native:/usr/lib/libpython3.11.so.1.0"}));
  EXPECT_EQ(harness_.stat("python_stack_without_gil"), 2);
  EXPECT_EQ(harness_.stat("python_stack_unavailable"), 1);
}

TEST(PythonSplice, ReplacesTheRunFromTheInnermostToTheOutermostInterpreterFrame) {
  const bool mixed[] = {false, true, false, true, false};
  const collector::PythonSplice s = collector::find_python_splice(mixed);
  EXPECT_EQ(s.begin, 1u);
  EXPECT_EQ(s.end, 4u);
  const bool none[] = {false, false};
  const collector::PythonSplice n = collector::find_python_splice(none);
  EXPECT_EQ(n.begin, 2u);
  EXPECT_EQ(n.end, 2u);
  const collector::PythonSplice empty = collector::find_python_splice({});
  EXPECT_EQ(empty.begin, 0u);
  EXPECT_EQ(empty.end, 0u);
}

}  // namespace
}  // namespace vramtrace
