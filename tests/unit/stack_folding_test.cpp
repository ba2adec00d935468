// The Python-first view of a stack (text/stack_folding.h): which frames fold, what the folded
// line says, and that a stack without Python frames is left whole but for its way in. The stacks
// are those real PyTorch 2.x and ctypes recorded on the simulated GPU, their frames' names and
// modules as the trace gave them.
#include "text/stack_folding.h"

#include <gtest/gtest.h>

#include "text/stack_text.h"

namespace vramtrace::text {
namespace {

using storage::FrameLanguage;
using storage::StackFrame;

constexpr const char* kTorchLib = "/venv/lib/python3.11/site-packages/torch/lib/";

StackFrame native(std::string function, const std::string& module) {
  StackFrame frame;
  frame.function = std::move(function);
  frame.module = module;
  return frame;
}

StackFrame torch(std::string function, const std::string& library) {
  return native(std::move(function), kTorchLib + library);
}

StackFrame python(std::string function, std::string file, int line) {
  StackFrame frame;
  frame.function = std::move(function);
  frame.file = std::move(file);
  frame.line = line;
  frame.module = *frame.file;
  frame.language = FrameLanguage::kPython;
  return frame;
}

// `x + x * self.weight` in a module's forward, called through nn.Module.__call__: the block of
// the addition's output (tests/torch/workloads/module_leak.py).
std::vector<StackFrame> torch_add_stack() {
  return {
      torch("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_found_block("
            "c10::cuda::CUDACachingAllocator::Native::(anonymous namespace)::AllocParams const&, "
            "unsigned long, std::shared_ptr<c10::GatheredContext>, bool)",
            "libc10_cuda.so"),
      torch("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned "
            "long, CUstream_st*)",
            "libc10_cuda.so"),
      torch("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned "
            "long)",
            "libc10_cuda.so"),
      torch("at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, "
            "c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)",
            "libtorch_cpu.so"),
      torch("at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)",
            "libtorch_cuda.so"),
      torch("at::TensorIteratorBase::build_borrowing_binary_op(at::TensorBase const&, "
            "at::TensorBase const&, at::TensorBase const&)",
            "libtorch_cpu.so"),
      torch("at::(anonymous namespace)::wrapper_CUDA_add_Tensor(at::Tensor const&, at::Tensor "
            "const&, c10::Scalar const&)",
            "libtorch_cuda.so"),
      torch("at::_ops::add_Tensor::redispatch(c10::DispatchKeySet, at::Tensor const&, "
            "at::Tensor const&, c10::Scalar const&)",
            "libtorch_cpu.so"),
      torch("at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar "
            "const&)",
            "libtorch_cpu.so"),
      torch("torch::autograd::THPVariable_add(_object*, _object*, _object*)", "libtorch_python.so"),
      torch("_object* torch::autograd::TypeError_to_NotImplemented_<&torch::autograd::"
            "THPVariable_add>(_object*, _object*, _object*)",
            "libtorch_python.so"),
      python("Residual.forward", "/work/model.py", 23),
      python("Module._call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
             1798),
      python("Module._wrapped_call_impl",
             "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 1787),
      python("collect", "/work/model.py", 27),
      python("<module>", "/work/model.py", 43),
  };
}

TEST(StackFolding, APyTorchStackOpensOnTheAllocationSiteThenTheUsersLine) {
  const std::vector<StackFrame> stack = torch_add_stack();
  const std::vector<StackLine> lines = fold_stack(stack);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_FALSE(lines[0].folded);
  EXPECT_EQ(lines[0].first, 0u);
  EXPECT_TRUE(lines[1].folded);
  EXPECT_EQ(lines[1].first, 1u);
  EXPECT_EQ(lines[1].last, 10u);
  EXPECT_EQ(lines[1].summary,
            "aten::add: 10 frames in libc10_cuda.so, libtorch_cpu.so, libtorch_cuda.so, "
            "libtorch_python.so");
  EXPECT_FALSE(lines[2].folded);
  EXPECT_EQ(lines[2].first, 11u);  // Residual.forward: the third line
  EXPECT_TRUE(lines[3].folded);
  EXPECT_EQ(lines[3].summary, "2 frames in nn.Module.__call__");
  EXPECT_EQ(lines[4].first, 14u);
  EXPECT_EQ(lines[5].first, 15u);

  const std::string text = format_stack(stack, StackView::kPythonFirst, "  ");
  const std::string first_three =
      std::string("  #0 ") + *stack[0].function + " (" + kTorchLib +
      "libc10_cuda.so)\n"
      "  #1-10 [aten::add: 10 frames in libc10_cuda.so, libtorch_cpu.so, libtorch_cuda.so, "
      "libtorch_python.so]\n"
      "  #11 Residual.forward at /work/model.py:23 (python)\n";
  EXPECT_EQ(text.substr(0, first_three.size()), first_three);
}

TEST(StackFolding, NativeShowsEveryFrameAndALimitSaysWhatIsLeft) {
  const std::vector<StackFrame> stack = torch_add_stack();
  const std::string native_text = format_stack(stack, StackView::kNative, "");
  EXPECT_EQ(std::count(native_text.begin(), native_text.end(), '\n'),
            static_cast<long>(stack.size()));
  EXPECT_NE(native_text.find("#9 torch::autograd::THPVariable_add"), std::string::npos);
  // Three lines, then what is left: frames 12 to 15.
  const std::string limited = format_stack(stack, StackView::kPythonFirst, "", 3);
  EXPECT_EQ(std::count(limited.begin(), limited.end(), '\n'), 4);
  EXPECT_TRUE(limited.ends_with("\n... 4 more frames\n")) << limited;
}

TEST(StackFolding, ACtypesCallFoldsItsBindingFramesAndKeepsTheProgramsOwn) {
  // A Python program calling a C library's allocating function through ctypes.
  const std::vector<StackFrame> stack{
      native("mini_alloc", "/work/build/libmini_cuda.so"),
      native("mini_helper", "/work/build/libmini_cuda.so"),
      [] {
        StackFrame unnamed = native("", "/usr/lib/x86_64-linux-gnu/libffi.so.8");
        unnamed.function.reset();
        return unnamed;
      }(),
      native("ffi_call", "/usr/lib/x86_64-linux-gnu/libffi.so.8"),
      native("_ctypes_callproc",
             "/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"),
      native("PyCFuncPtr_call",
             "/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"),
      python("leak_it", "/work/app.py", 12),
      python("<module>", "/work/app.py", 20),
      native("Py_RunMain", "/usr/bin/python3.11"),
      native("__libc_start_main", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
      native("_start", "/usr/bin/python3.11"),
  };
  const std::vector<StackLine> lines = fold_stack(stack);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0].first, 0u);
  EXPECT_EQ(lines[1].first, 1u);  // the program's own native frame stays
  EXPECT_FALSE(lines[1].folded);
  EXPECT_TRUE(lines[2].folded);
  EXPECT_EQ(lines[2].summary, "4 frames in libffi.so.8, _ctypes.cpython-311-x86_64-linux-gnu.so");
  EXPECT_EQ(lines[3].first, 6u);
  EXPECT_EQ(lines[4].first, 7u);
  // Outside the outermost Python frame: the interpreter's start-up, libc's frame too.
  EXPECT_TRUE(lines[5].folded);
  EXPECT_EQ(lines[5].first, 8u);
  EXPECT_EQ(lines[5].last, 10u);
  EXPECT_EQ(lines[5].summary, "3 frames in python3.11, libc.so.6");
}

TEST(StackFolding, AStackWithoutPythonIsLeftWhole) {
  const std::vector<StackFrame> stack{
      torch("at::_ops::add_Tensor::call(at::Tensor const&)", "libtorch_cpu.so"),
      torch("at::_ops::add_Tensor::call(at::Tensor const&)", "libtorch_cpu.so"),
      native("main", "/work/bin/app"),
  };
  const std::vector<StackLine> lines = fold_stack(stack);
  ASSERT_EQ(lines.size(), 3u);
  for (const StackLine& line : lines) EXPECT_FALSE(line.folded);
}

// A native program's stacks as samples/leaky recorded them: main's, and a std::thread's.
TEST(StackFolding, ANativeStacksWayInIsOneLine) {
  const std::string app = "/work/bin/leaky", libc = "/lib/x86_64-linux-gnu/libc.so.6";
  const std::vector<StackFrame> from_main{
      native("fill_cache()", app), native("main", app), native("__libc_start_call_main", libc),
      native("__libc_start_main_impl", libc), native("_start", app)};
  std::vector<StackLine> lines = fold_stack(from_main);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_FALSE(lines[0].folded);
  EXPECT_FALSE(lines[1].folded);  // main: the program's own
  EXPECT_TRUE(lines[2].folded);
  EXPECT_EQ(lines[2].first, 2u);
  EXPECT_EQ(lines[2].last, 4u);
  EXPECT_EQ(lines[2].summary, "program start: 3 frames in libc.so.6, leaky");

  StackFrame routine = native("??", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
  routine.function.reset();
  const std::vector<StackFrame> from_thread{
      native("worker(int)", app),
      native("void std::__invoke_impl<void, void (*)(int), int>(std::__invoke_other, void "
             "(*&&)(int), int&&)",
             app),
      native("std::thread::_Invoker<std::tuple<void (*)(int), int> >::operator()()", app),
      native("std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (*)(int), int> > "
             ">::_M_run()",
             app),
      routine,
      native("start_thread", libc),
      native("__clone3", libc)};
  lines = fold_stack(from_thread);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].summary, "thread start: 6 frames in leaky, libstdc++.so.6, libc.so.6");

  // One frame of it, or a stack that is nothing else, is left as it is.
  EXPECT_EQ(fold_stack({native("f", app), native("_start", app)}).size(), 2u);
  for (const StackLine& line : fold_stack({native("start_thread", libc), native("__clone3", libc)}))
    EXPECT_FALSE(line.folded);
}

TEST(StackFolding, EachRuleFoldsItsFramesAndNoOthers) {
  EXPECT_EQ(fold_class(native("f", "/usr/lib/libpython3.11.so.1.0")), FoldClass::kInterpreter);
  EXPECT_EQ(fold_class(native("f", "/usr/bin/python3.11")), FoldClass::kInterpreter);
  EXPECT_EQ(fold_class(torch("f", "libtorch_python.so")), FoldClass::kBinding);
  EXPECT_EQ(fold_class(native("f", "/venv/torch/_C.cpython-311-x86_64-linux-gnu.so")),
            FoldClass::kBinding);
  EXPECT_EQ(fold_class(native("f", "/usr/lib/libffi.so.8")), FoldClass::kBinding);
  EXPECT_EQ(fold_class(torch("f", "libtorch_cpu.so")), FoldClass::kFramework);
  EXPECT_EQ(fold_class(torch("f", "libc10_cuda.so")), FoldClass::kFramework);
  EXPECT_EQ(fold_class(native("f", "/usr/local/cuda/lib64/libcudart.so.13")),
            FoldClass::kFramework);
  EXPECT_EQ(fold_class(python("Module._call_impl", "/v/torch/nn/modules/module.py", 1)),
            FoldClass::kFramework);
  // Shown: the program's own code, torch's Python that is not the call plumbing, libc.
  EXPECT_EQ(fold_class(native("f", "/work/lib/libmodel_ops.so")), FoldClass::kNone);
  EXPECT_EQ(fold_class(native("f", "/usr/lib/x86_64-linux-gnu/libc.so.6")), FoldClass::kNone);
  EXPECT_EQ(fold_class(python("LayerNorm.forward", "/v/torch/nn/modules/normalization.py", 1)),
            FoldClass::kNone);
  EXPECT_EQ(fold_class(python("Model._call_impl", "/work/model.py", 1)), FoldClass::kNone);
}

TEST(StackFolding, TheOperatorIsNamedWithoutItsOverload) {
  EXPECT_EQ(aten_operator("at::_ops::mul_Tensor::call(at::Tensor const&, at::Tensor const&)"),
            "aten::mul");
  EXPECT_EQ(aten_operator("at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>)"),
            "aten::empty");
  EXPECT_EQ(aten_operator("at::_ops::sum_dim_IntList::call(at::Tensor const&)"), "aten::sum");
  EXPECT_EQ(aten_operator("at::_ops::to_dtype_layout::call(at::Tensor const&)"), "aten::to");
  EXPECT_EQ(aten_operator("at::_ops::native_layer_norm::call(at::Tensor const&)"),
            "aten::native_layer_norm");
  EXPECT_EQ(aten_operator("at::_ops::add_Tensor::redispatch(c10::DispatchKeySet)"), "aten::add");
  EXPECT_EQ(aten_operator("at::native::add(at::Tensor const&)"), "");
}

TEST(StackFolding, FoldedFramesAreWhatATreeMerges) {
  std::vector<StackFrame> a = torch_add_stack();
  std::vector<StackFrame> b = torch_add_stack();
  b[5].function = "at::TensorIteratorBase::build(at::TensorIteratorConfig&)";  // inside the run
  const std::vector<StackFrame> folded_a = folded_frames(a), folded_b = folded_frames(b);
  ASSERT_EQ(folded_a.size(), 6u);
  EXPECT_EQ(folded_a[1].function, folded_b[1].function);
  EXPECT_EQ(*folded_a[1].function,
            "[aten::add: 10 frames in libc10_cuda.so, libtorch_cpu.so, libtorch_cuda.so, "
            "libtorch_python.so]");
  EXPECT_TRUE(folded_a[1].module.empty());
  EXPECT_EQ(folded_a[2].function, "Residual.forward");
}

}  // namespace
}  // namespace vramtrace::text
