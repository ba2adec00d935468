// A process tree: the parent leaks one buffer, forks a child that leaks another, and (when
// asked) the child execs a program that leaks a third. Each process must be in the trace with
// its own allocations, and nothing of the parent's may be counted twice.
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  void* parent_buffer = nullptr;
  cudaMalloc(&parent_buffer, 1 << 20);  // leaked by the parent
  const pid_t child = fork();
  if (child == 0) {
    void* child_buffer = nullptr;
    cudaMalloc(&child_buffer, 2 << 20);  // leaked by the child
    void* scratch = nullptr;
    cudaMalloc(&scratch, 4096);
    cudaFree(scratch);
    if (argc > 1) {
      execv(argv[1], argv + 1);
      std::perror("execv");
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  void* after = nullptr;
  cudaMalloc(&after, 3 << 20);  // the parent goes on recording after the fork
  cudaFree(after);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
