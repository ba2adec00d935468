#include "analysis/reports/backend_comparison.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace vramtrace::analysis {
namespace {

// What makes two backends' records the same allocation.
using Key =
    std::tuple<std::uint32_t, int, std::uint64_t, std::uint64_t>;  // pid, kind, address, size

struct Seen {
  std::vector<storage::AllocationRow> preload, cupti;  // each in its process's order
};

}  // namespace

BackendComparison compare_backends(const storage::TraceReader& trace, std::size_t limit) {
  BackendComparison out;
  const std::map<std::int64_t, std::string> backends = trace.process_backends();
  std::map<std::int64_t, std::uint32_t> pids;
  for (const storage::ProcessRecord& p : trace.processes()) pids[p.start.upid] = p.start.pid;
  bool any_preload = false, any_cupti = false;
  for (const auto& [upid, backend] : backends) {
    any_preload |= backend == storage::kBackendPreload;
    any_cupti |= backend == storage::kBackendCupti;
  }
  out.both = any_preload && any_cupti;
  if (!out.both) return out;

  std::map<int, BackendKindTotals> kinds;
  std::map<Key, Seen> seen;
  storage::AllocationFilter succeeded;
  succeeded.outcome = storage::AllocationFilter::Outcome::kSucceeded;
  trace.for_each_allocation(succeeded, [&](const storage::AllocationRecord& record) {
    const storage::AllocationRow& a = record.allocation;
    const auto backend = backends.find(a.upid);
    const bool cupti = backend != backends.end() && backend->second == storage::kBackendCupti;
    BackendKindTotals& totals = kinds[a.kind];
    (cupti ? totals.cupti_allocations : totals.preload_allocations) += 1;
    (cupti ? totals.cupti_bytes : totals.preload_bytes) += a.size;
    Seen& s = seen[{pids[a.upid], a.kind, a.address, a.size}];
    (cupti ? s.cupti : s.preload).push_back(a);
  });
  for (auto& [kind, totals] : kinds) {
    totals.kind = kind;
    totals.name = trace.kind_name(kind);
    out.kinds.push_back(totals);
  }

  std::vector<std::pair<std::pair<std::uint32_t, std::uint64_t>, UnmatchedAllocation>>
      unmatched;  // by (pid, alloc_seq)
  auto extra = [&](const std::vector<storage::AllocationRow>& rows, std::size_t from,
                   std::string_view backend, std::uint32_t pid) {
    for (std::size_t i = from; i < rows.size(); ++i) {
      const storage::AllocationRow& a = rows[i];
      unmatched.push_back({{pid, a.alloc_seq},
                           {std::string(backend), pid, a.id, trace.kind_name(a.kind),
                            trace.api_name(a.api), a.address, a.size}});
    }
  };
  for (const auto& [key, s] : seen) {
    const std::uint32_t pid = std::get<0>(key);
    if (s.preload.size() > s.cupti.size()) {
      out.only_preload += s.preload.size() - s.cupti.size();
      extra(s.preload, s.cupti.size(), storage::kBackendPreload, pid);
    } else if (s.cupti.size() > s.preload.size()) {
      out.only_cupti += s.cupti.size() - s.preload.size();
      extra(s.cupti, s.preload.size(), storage::kBackendCupti, pid);
    }
  }
  std::sort(unmatched.begin(), unmatched.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < unmatched.size() && i < limit; ++i)
    out.unmatched.push_back(std::move(unmatched[i].second));
  return out;
}

}  // namespace vramtrace::analysis
