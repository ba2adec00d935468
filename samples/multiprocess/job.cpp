// A distributed job in miniature, for `vramtrace run -- job`: a launcher starts 4 ranks (as
// torchrun does: fork, exec, RANK/LOCAL_RANK/WORLD_SIZE in the environment), and each rank
// forks 2 data-loader workers. Every process allocates and leaves a known amount behind, so
// that a test can check that each process is in the trace, with its parent and rank, and that
// each one's leaks are its own:
//   launcher: nothing;  rank r: (r + 1) MiB of device memory;  worker w of rank r:
//   (w + 1) * 64 KiB of pinned host memory plus 256 KiB of device memory freed again.
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kRanks = 4;
constexpr int kWorkersPerRank = 2;
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kKiB = size_t{1} << 10;

int wait_all(const std::vector<pid_t>& children) {
  int failures = 0;
  for (pid_t child : children) {
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      ++failures;
  }
  return failures;
}

__attribute__((noinline)) int worker(int rank, int index) {
  void* scratch = nullptr;
  if (cudaMalloc(&scratch, 256 * kKiB) != cudaSuccess || cudaFree(scratch) != cudaSuccess) return 1;
  void* batch = nullptr;
  if (cudaMallocHost(&batch, (index + 1) * 64 * kKiB) != cudaSuccess) return 1;  // left behind
  std::printf("job: rank %d worker %d (pid %d) done\n", rank, index, static_cast<int>(getpid()));
  return 0;
}

__attribute__((noinline)) int rank_main(int rank) {
  void* weights = nullptr;
  if (cudaMalloc(&weights, (rank + 1) * kMiB) != cudaSuccess) return 1;  // left behind
  std::vector<pid_t> workers;
  for (int w = 0; w < kWorkersPerRank; ++w) {
    pid_t pid = fork();
    if (pid == 0) _exit(worker(rank, w));
    workers.push_back(pid);
  }
  const int failures = wait_all(workers);
  std::printf("job: rank %d (pid %d) done\n", rank, static_cast<int>(getpid()));
  return failures == 0 ? 0 : 1;
}

int launcher(const char* self) {
  std::vector<pid_t> ranks;
  for (int r = 0; r < kRanks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      const std::string rank = std::to_string(r);
      setenv("RANK", rank.c_str(), 1);
      setenv("LOCAL_RANK", rank.c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(kRanks).c_str(), 1);
      execl(self, self, "--rank", rank.c_str(), static_cast<char*>(nullptr));
      std::perror("job: exec");
      _exit(127);
    }
    ranks.push_back(pid);
  }
  const int failures = wait_all(ranks);
  std::printf("job: launcher (pid %d) done, %d rank(s) failed\n", static_cast<int>(getpid()),
              failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--rank") == 0) return rank_main(std::atoi(argv[2]));
  return launcher("/proc/self/exe");
}
