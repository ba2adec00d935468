// The shim as a guest in someone else's process: what it links, what it exports, and that
// it never changes what the program sees.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "guest_library.h"
#include "process_runner.h"

namespace vramtrace::test {
namespace {

TEST(Shim, LinksOnlyTheCLibraryAndTheLoader) {
  expect_links_only_libc(PRELOAD_LIB);
}

TEST(Shim, ExportsOnlyHooksAndItsCApi) {
  ProcessResult nm = run_process({.argv = {"nm", "-D", "--defined-only", PRELOAD_LIB}});
  ASSERT_EQ(nm.exit_code(), 0) << nm.err;
  const std::set<std::string> hooks = {
      // the runtime's allocation family
      "cudaMalloc", "cudaFree", "cudaMallocManaged", "cudaMallocHost", "cudaHostAlloc",
      "cudaFreeHost", "cudaMallocPitch", "cudaMalloc3D", "cudaMallocAsync", "cudaMallocAsync_ptsz",
      "cudaMallocFromPoolAsync", "cudaMallocFromPoolAsync_ptsz", "cudaFreeAsync",
      "cudaFreeAsync_ptsz",
      // the driver's, under the versioned names the driver exports
      "cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemFree_v2", "cuMemAllocManaged", "cuMemHostAlloc",
      "cuMemAllocHost_v2", "cuMemFreeHost", "cuMemAllocAsync", "cuMemAllocAsync_ptsz",
      "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz", "cuMemFreeAsync",
      "cuMemFreeAsync_ptsz", "cuMemCreate", "cuMemRelease", "cuMemAddressReserve",
      "cuMemAddressFree", "cuMemMap", "cuMemUnmap",
      // the resolvers through which a static cudart finds the driver
      "cuGetProcAddress", "cuGetProcAddress_v2", "dlsym",
      // unloads: the shim forgets its pointers into the unloaded library
      "dlclose",
      // NVTX 3's injection entry point: the shim receives a program's NVTX calls
      "InitializeInjectionNvtx2",
      // the wait family: a parent reports how its children ended
      "waitpid", "wait", "wait3", "wait4", "waitid",
      // PyTorch's allocator reports, mangled as libc10.so exports them:
      // c10::reportMemoryUsageToProfiler(void*, long, unsigned long, unsigned long, c10::Device)
      // c10::reportOutOfMemoryToProfiler(long, unsigned long, unsigned long, c10::Device)
      "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE",
      "_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE"};
  std::set<std::string> exported;
  for (const auto& line : lines(nm.out)) {
    std::string address, type, name;
    std::istringstream(line) >> address >> type >> name;
    exported.insert(name);
    EXPECT_TRUE(hooks.count(name) == 1 || name.rfind("vramtrace_", 0) == 0)
        << "unexpected export: " << line;
  }
  for (const auto& hook : hooks) EXPECT_EQ(exported.count(hook), 1u) << hook << " not exported";
}

// Without a collector to talk to, the shim is a pass-through: same output, same status.
TEST(Shim, WithoutCollectorTheProgramRunsUnchanged) {
  ProcessResult plain = run_process({.argv = {CUDART_CODES_SIM_BIN}});
  ProcessResult preloaded = run_process({.argv = {CUDART_CODES_SIM_BIN},
                                         .extra_env = {std::string("LD_PRELOAD=") + PRELOAD_LIB},
                                         .unset_env = {"VRAMTRACE_SOCKET"}});
  ASSERT_EQ(plain.exit_code(), 0);
  EXPECT_EQ(preloaded.exit_code(), 0);
  EXPECT_EQ(preloaded.out, plain.out);
  EXPECT_EQ(preloaded.err, "");
}

// A collector that cannot be reached: one line on stderr, then the program runs untraced.
TEST(Shim, UnreachableCollectorCostsOneLineAndNothingElse) {
  ProcessResult plain = run_process({.argv = {CUDART_CODES_SIM_BIN}});
  ProcessResult orphan =
      run_process({.argv = {CUDART_CODES_SIM_BIN},
                   .extra_env = {std::string("LD_PRELOAD=") + PRELOAD_LIB,
                                 "VRAMTRACE_SOCKET=/nonexistent/vramtrace.sock"}});
  EXPECT_EQ(orphan.exit_code(), 0);
  EXPECT_EQ(orphan.out, plain.out);
  std::vector<std::string> said = lines(orphan.err);
  ASSERT_EQ(said.size(), 1u) << orphan.err;
  EXPECT_EQ(said[0].rfind("vramtrace: ", 0), 0u) << said[0];
}

// A collector that takes the ring and then goes away without reading it: the program fills
// its ring, waits, sees the collector gone, says so once, and finishes untraced.
TEST(Shim, CollectorVanishingMidRunCostsOneLineAndNothingElse) {
  const std::string dir = std::string(testing::TempDir()) + "/vanish-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/c.sock";
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  std::thread fake_collector([listener] {
    int c = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    char hello[64];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    iovec iov{hello, sizeof hello};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    recvmsg(c, &msg, MSG_CMSG_CLOEXEC);  // takes the ring, never reads it
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    close(c);
  });
  ProcessResult run =
      run_process({.argv = {THREAD_STORM_BIN, "2", "20000"},
                   .extra_env = {std::string("LD_PRELOAD=") + PRELOAD_LIB,
                                 "VRAMTRACE_SOCKET=" + path, "VRAMTRACE_RING_BYTES=64K"}});
  fake_collector.join();
  close(listener);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(run.exit_code(), 0) << run.err;
  EXPECT_NE(run.out.find("0 failures"), std::string::npos) << run.out;
  std::vector<std::string> said = lines(run.err);
  ASSERT_EQ(said.size(), 1u) << run.err;
  EXPECT_NE(said[0].find("the collector went away"), std::string::npos) << said[0];
}

// Recording must not change a single return code or sticky error the program sees.
void expect_same_codes_under_vramtrace(const char* program) {
  ProcessResult plain = run_process({.argv = {program}});
  ProcessResult traced = run_process(
      {.argv = {VRAMTRACE_BIN, "run", "-o",
                std::string(testing::TempDir()) + "/codes-" + std::to_string(getpid()) + ".db",
                "--force", "--", program}});
  EXPECT_EQ(traced.exit_code(), plain.exit_code()) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_GT(lines(plain.out).size(), 10u) << plain.out;
}

TEST(Shim, SimulatedCudartReturnCodesUnchanged) {
  expect_same_codes_under_vramtrace(CUDART_CODES_SIM_BIN);
}

#ifdef STATIC_CUDART_SAMPLE_BIN
// nvcc's default static cudart, whose dlsym of libcuda and cuGetProcAddress calls go through
// the shim. Without a real driver it fails (no driver at all, or the simulated one, which
// lacks the real driver's private interfaces): it must fail the same way under vramtrace.
TEST(Shim, StaticCudartFailsTheSameWayWithoutARealDriver) {
  for (const std::string& library_path :
       {std::string("/nonexistent"), std::string(SIMCUDA_LIB_DIR)}) {
    SCOPED_TRACE(library_path);
    const std::string env = "LD_LIBRARY_PATH=" + library_path;
    ProcessResult plain = run_process({.argv = {STATIC_CUDART_SAMPLE_BIN}, .extra_env = {env}});
    ProcessResult traced = run_process(
        {.argv = {VRAMTRACE_BIN, "run", "--force", "-o",
                  std::string(testing::TempDir()) + "/static-" + std::to_string(getpid()) + ".db",
                  "--", STATIC_CUDART_SAMPLE_BIN},
         .extra_env = {env}});
    EXPECT_EQ(traced.exit_code(), plain.exit_code()) << traced.err;
    EXPECT_EQ(traced.out, plain.out);
    EXPECT_NE(plain.out, "");
  }
}
#endif

#ifdef CUDART_CODES_REAL_BIN
// Against the CUDA toolkit's own libcudart. On a machine without a driver every call fails,
// and those errors too must pass through unchanged.
TEST(Shim, RealCudartReturnCodesUnchanged) {
  expect_same_codes_under_vramtrace(CUDART_CODES_REAL_BIN);
}
#endif

}  // namespace
}  // namespace vramtrace::test
