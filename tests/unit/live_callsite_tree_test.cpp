// Callsite trees from hand-built stacks: frames merge by what a person reads, children come
// largest first, allocations without a stack get a root of their own, and each node keeps the
// Python line of its largest Python-driven stack.
#include "analysis/values/live_callsite_tree.h"

#include "analysis/reports/leak_report.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace vramtrace {
namespace {

storage::StackFrame frame(const char* function, int line, std::uint64_t rel_pc = 0) {
  storage::StackFrame f;
  f.function = function;
  f.file = "train.py";
  f.line = line;
  f.module = "/usr/bin/python3";
  f.rel_pc = rel_pc;
  return f;
}

storage::StackFrame unsymbolized(std::uint64_t rel_pc) {
  storage::StackFrame f;
  f.module = "/usr/lib/libcuda.so.1";
  f.rel_pc = rel_pc;
  return f;
}

TEST(CallsiteTree, MergesFramesByPlaceAndSortsLargestFirst) {
  // Innermost first. Two return addresses on line 7 of small() are one node; two unknown
  // addresses in libcuda are two.
  const std::vector<storage::StackFrame> a{frame("small", 7, 0x10), frame("main", 1)};
  const std::vector<storage::StackFrame> b{frame("small", 7, 0x18), frame("main", 1)};
  const std::vector<storage::StackFrame> c{unsymbolized(0x100), frame("big", 9), frame("main", 1)};
  const std::vector<storage::StackFrame> d{unsymbolized(0x200), frame("big", 9), frame("main", 1)};
  const std::vector<analysis::StackBytes> stacks{
      {&a, 100, 1}, {&b, 50, 2}, {&c, 1000, 1}, {&d, 10, 1}, {nullptr, 5, 1}};

  const auto top_down = analysis::build_callsite_tree(stacks, analysis::TreeDirection::kTopDown);
  ASSERT_EQ(top_down.size(), 2u);
  EXPECT_EQ(top_down[0].frame.function, "main");
  EXPECT_EQ(top_down[0].bytes, 1160u);
  EXPECT_EQ(top_down[0].count, 5u);
  ASSERT_EQ(top_down[0].children.size(), 2u);
  EXPECT_EQ(top_down[0].children[0].frame.function, "big");
  EXPECT_EQ(top_down[0].children[0].bytes, 1010u);
  EXPECT_EQ(top_down[0].children[0].children.size(), 2u);  // two unknown addresses
  EXPECT_EQ(top_down[0].children[1].frame.function, "small");
  EXPECT_EQ(top_down[0].children[1].bytes, 150u);
  EXPECT_EQ(top_down[0].children[1].count, 3u);
  EXPECT_TRUE(top_down[0].children[1].children.empty());
  // No stack: a root without a function or module.
  EXPECT_EQ(top_down[1].frame.function, std::nullopt);
  EXPECT_EQ(top_down[1].frame.module, "");
  EXPECT_EQ(top_down[1].bytes, 5u);

  const auto bottom_up = analysis::build_callsite_tree(stacks, analysis::TreeDirection::kBottomUp);
  ASSERT_EQ(bottom_up.size(), 4u);  // libcuda+0x100, small, libcuda+0x200, no stack
  EXPECT_EQ(bottom_up[0].frame.rel_pc, 0x100u);
  EXPECT_EQ(bottom_up[0].children[0].frame.function, "big");
  EXPECT_EQ(bottom_up[1].frame.function, "small");
  EXPECT_EQ(bottom_up[1].bytes, 150u);
  EXPECT_EQ(bottom_up[1].children[0].frame.function, "main");
  EXPECT_EQ(bottom_up[2].bytes, 10u);
  EXPECT_EQ(bottom_up[3].bytes, 5u);
}

TEST(CallsiteTree, LeakTreeSumsTheReportsGroupsKindsOfOneStackTogether) {
  analysis::LeakGroup device, pinned, no_stack;
  device.stack = {frame("alloc", 3), frame("main", 1)};
  device.bytes = 400;
  device.count = 2;
  pinned.stack = device.stack;  // the same stack, another kind
  pinned.bytes = 100;
  pinned.count = 1;
  no_stack.bytes = 7;
  no_stack.count = 1;

  const auto top_down =
      analysis::build_leak_tree({pinned, device, no_stack}, analysis::TreeDirection::kTopDown);
  ASSERT_EQ(top_down.size(), 2u);
  EXPECT_EQ(top_down[0].frame.function, "main");
  EXPECT_EQ(top_down[0].bytes, 500u);
  EXPECT_EQ(top_down[0].count, 3u);
  ASSERT_EQ(top_down[0].children.size(), 1u);
  EXPECT_EQ(top_down[0].children[0].frame.function, "alloc");
  EXPECT_EQ(top_down[1].bytes, 7u);

  const auto bottom_up =
      analysis::build_leak_tree({device, no_stack}, analysis::TreeDirection::kBottomUp);
  ASSERT_EQ(bottom_up.size(), 2u);
  EXPECT_EQ(bottom_up[0].frame.function, "alloc");
  EXPECT_EQ(bottom_up[0].children[0].frame.function, "main");
}

storage::StackFrame native(const char* function, const char* module) {
  storage::StackFrame f;
  f.function = function;
  f.module = module;
  return f;
}

storage::StackFrame python(const char* function, const char* file, int line) {
  storage::StackFrame f = frame(function, line);
  f.file = file;
  f.language = storage::FrameLanguage::kPython;
  return f;
}

TEST(CallsiteTree, NodesKeepTheInnermostPythonFrameOfTheirLargestStack) {
  // Innermost first, as PyTorch allocates: libc10's malloc, then torch's native frames, then
  // the user's Python lines, then the interpreter's main.
  const storage::StackFrame malloc = native("c10::cuda::CUDACachingAllocator::malloc", "libc10.so");
  const storage::StackFrame empty = native("at::native::empty_cuda", "libtorch_cuda.so");
  const storage::StackFrame main = native("main", "/usr/bin/python3");
  const std::vector<storage::StackFrame> forward{malloc, empty, python("forward", "model.py", 12),
                                                 python("step", "train.py", 30), main};
  const std::vector<storage::StackFrame> backward{malloc, empty, python("backward", "train.py", 8),
                                                  python("step", "train.py", 31), main};
  const std::vector<storage::StackFrame> native_only{native("init", "libwork.so"), main};
  // backward's stack is the largest (300 + 200 bytes, given twice as a leak report gives one
  // stack per kind), though each of its entries is smaller than forward's 400.
  const std::vector<analysis::StackBytes> stacks{
      {&forward, 400, 1}, {&backward, 300, 1}, {&backward, 200, 1}, {&native_only, 9000, 1}};

  const auto bottom_up = analysis::build_callsite_tree(stacks, analysis::TreeDirection::kBottomUp);
  ASSERT_EQ(bottom_up.size(), 2u);          // init (9000), malloc (900)
  EXPECT_FALSE(bottom_up[0].python_frame);  // no stack through init has a Python frame
  const analysis::CallsiteNode& site = bottom_up[1];
  EXPECT_EQ(site.frame.function, "c10::cuda::CUDACachingAllocator::malloc");
  ASSERT_TRUE(site.python_frame);
  EXPECT_EQ(site.python_frame->function, "backward");
  EXPECT_EQ(site.python_frame->file, "train.py");
  EXPECT_EQ(site.python_frame->line, 8);
  EXPECT_EQ(site.python_stack_bytes, 500u);
  // Further out, a node through forward's stack alone keeps forward's line, even where the node
  // is an outer Python frame: the line is the innermost one, nearest the allocation.
  const analysis::CallsiteNode& torch = site.children.at(0);
  ASSERT_EQ(torch.children.size(), 2u);
  const analysis::CallsiteNode& via_forward = torch.children[1];
  EXPECT_EQ(via_forward.frame.function, "forward");
  ASSERT_TRUE(via_forward.python_frame);
  EXPECT_EQ(via_forward.python_frame->function, "forward");
  const analysis::CallsiteNode& step = via_forward.children.at(0);
  EXPECT_EQ(step.frame.function, "step");
  EXPECT_EQ(step.python_frame->function, "forward");
  EXPECT_EQ(step.python_frame->line, 12);

  // Top-down the root is main, through which all three stacks pass: the largest of those with a
  // Python frame gives its line; the native-only stack, larger still, has none to give.
  const auto top_down = analysis::build_callsite_tree(stacks, analysis::TreeDirection::kTopDown);
  ASSERT_EQ(top_down.size(), 1u);
  ASSERT_TRUE(top_down[0].python_frame);
  EXPECT_EQ(top_down[0].python_frame->function, "backward");
  const auto init = std::find_if(
      top_down[0].children.begin(), top_down[0].children.end(),
      [](const analysis::CallsiteNode& node) { return node.frame.function == "init"; });
  ASSERT_NE(init, top_down[0].children.end());
  EXPECT_FALSE(init->python_frame);
}

TEST(CallsiteTree, PythonLibraryFilesAreInstalledPackagesAndTheStandardLibrary) {
  for (const char* library :
       {"/venv/lib/python3.11/site-packages/torch/nn/functional.py",
        "/usr/lib/python3/dist-packages/numpy/core/numeric.py",
        "/usr/lib/python3.11/json/decoder.py", "/opt/conda/lib/python3.10/runpy.py",
        "/usr/lib64/python3.12/threading.py", "site-packages/torch/optim/adam.py",
        "<frozen runpy>"})
    EXPECT_TRUE(analysis::python_library_file(library)) << library;
  for (const char* user :
       {"/home/user/project/train.py", "model.py", "/srv/lib/models/site.py",
        "/home/user/python3.11/train.py", "/home/user/lib/python3.11", "/work/site-packages.py"})
    EXPECT_FALSE(analysis::python_library_file(user)) << user;
}

TEST(CallsiteTree, ThePythonLineIsTheUsersInnermostLinePastTorchsOwnPython) {
  const storage::StackFrame malloc = native("c10::cuda::CUDACachingAllocator::malloc", "libc10.so");
  const storage::StackFrame relu =
      python("relu", "/venv/lib/python3.11/site-packages/torch/nn/functional.py", 1500);
  const storage::StackFrame call_impl =
      python("_call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 1527);
  const storage::StackFrame forward = python("forward", "/home/user/model.py", 27);
  const std::vector<storage::StackFrame> through_torch{malloc, relu, forward, call_impl,
                                                       python("step", "train.py", 30)};
  EXPECT_EQ(analysis::user_python_frame(through_torch), &through_torch[2]);
  // Only library Python (torch's own, called from C++): the innermost of it.
  const std::vector<storage::StackFrame> library_only{malloc, relu, call_impl};
  EXPECT_EQ(analysis::user_python_frame(library_only), &library_only[1]);
  const std::vector<storage::StackFrame> native_only{malloc};
  EXPECT_EQ(analysis::user_python_frame(native_only), nullptr);

  // The tree's Python line is that frame, at every node of the stack.
  const std::vector<analysis::StackBytes> stacks{{&through_torch, 64, 1}};
  const auto bottom_up = analysis::build_callsite_tree(stacks, analysis::TreeDirection::kBottomUp);
  ASSERT_EQ(bottom_up.size(), 1u);
  ASSERT_TRUE(bottom_up[0].python_frame);
  EXPECT_EQ(bottom_up[0].python_frame->function, "forward");
  EXPECT_EQ(bottom_up[0].children.at(0).python_frame->function, "forward");  // relu's node
}

}  // namespace
}  // namespace vramtrace
