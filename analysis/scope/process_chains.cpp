#include "analysis/scope/process_chains.h"

#include <algorithm>
#include <tuple>

namespace vramtrace::analysis {
namespace {

bool same_pid(const storage::ProcessRecord& a, const storage::ProcessRecord& b) {
  return a.start.pid == b.start.pid && a.start.ppid == b.start.ppid &&
         a.start.host == b.start.host && a.start.backend == b.start.backend;
}

}  // namespace

bool ProcessChain::contains(std::int64_t upid) const {
  return std::any_of(images.begin(), images.end(),
                     [&](const storage::ProcessRecord& image) { return image.start.upid == upid; });
}

std::vector<ProcessChain> chain_processes(std::vector<storage::ProcessRecord> processes,
                                          const std::vector<std::int64_t>& gpu_upids) {
  // One pid's images side by side, in the order they started.
  std::sort(processes.begin(), processes.end(), [](const auto& a, const auto& b) {
    return std::tie(a.start.host, a.start.backend, a.start.pid, a.start.ppid, a.start.start_ns,
                    a.start.upid) < std::tie(b.start.host, b.start.backend, b.start.pid,
                                             b.start.ppid, b.start.start_ns, b.start.upid);
  });
  std::vector<ProcessChain> chains;
  for (storage::ProcessRecord& image : processes) {
    const bool continues = !chains.empty() && same_pid(chains.back().images.back(), image);
    if (!continues) chains.emplace_back();
    ProcessChain& chain = chains.back();
    if (std::binary_search(gpu_upids.begin(), gpu_upids.end(), image.start.upid)) {
      chain.gpu = true;
      chain.gpu_images.push_back(image.start.upid);
      chain.named = chain.images.size();
    } else if (!chain.gpu) {
      chain.named = chain.images.size();
    }
    chain.images.push_back(std::move(image));
  }
  std::stable_sort(chains.begin(), chains.end(), [](const auto& a, const auto& b) {
    return std::tie(a.images.front().start.start_ns, a.images.front().start.upid) <
           std::tie(b.images.front().start.start_ns, b.images.front().start.upid);
  });
  return chains;
}

GpuProcesses gpu_processes(const std::vector<ProcessChain>& chains) {
  GpuProcesses result;
  for (const ProcessChain& chain : chains) {
    if (chain.gpu)
      result.gpu.push_back(&chain);
    else
      ++result.others;
  }
  return result;
}

std::string process_label(std::uint32_t pid, std::optional<int> rank) {
  const std::string named = "pid " + std::to_string(pid);
  return rank ? "rank " + std::to_string(*rank) + " (" + named + ")" : named;
}

std::string image_name(const storage::ProcessRecord& image) {
  const std::string& path = image.start.exe.empty() && !image.start.argv.empty()
                                ? image.start.argv.front()
                                : image.start.exe;
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace vramtrace::analysis
