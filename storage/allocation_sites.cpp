#include "storage/allocation_sites.h"

#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>

#include "storage/sqlite_statement.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

struct SiteKey {
  std::int64_t utid = 0;
  std::optional<std::int64_t> callsite_id;
  int kind = 0, api = 0, device = 0, result = 0;
  std::uint64_t stream = 0;
  std::uint32_t flags = 0;
  std::optional<std::uint64_t> pool;

  explicit SiteKey(const AllocationRow& row)
      : utid(row.alloc_utid),
        callsite_id(row.alloc_callsite_id),
        kind(row.kind),
        api(row.api),
        device(row.device),
        result(row.result),
        stream(row.stream),
        flags(row.flags),
        pool(row.pool) {}
  bool operator==(const SiteKey&) const = default;
};

struct FreeSiteKey {
  std::int64_t utid = 0;
  std::optional<std::int64_t> callsite_id;
  int api = 0;

  explicit FreeSiteKey(const FreeRow& row)
      : utid(row.free_utid), callsite_id(row.free_callsite_id), api(row.free_api) {}
  bool operator==(const FreeSiteKey&) const = default;
};

std::size_t mix(std::size_t seed, std::uint64_t value) {
  // boost::hash_combine's mixing, on 64 bits.
  return seed ^
         (std::hash<std::uint64_t>{}(value) + 0x9e3779b97f4a7c15ULL + (seed << 12) + (seed >> 4));
}

std::uint64_t optional_bits(const std::optional<std::int64_t>& value) {
  return value ? static_cast<std::uint64_t>(*value) : 0x8000000000000000ULL;
}

struct SiteKeyHash {
  std::size_t operator()(const SiteKey& key) const {
    std::size_t h = mix(0, static_cast<std::uint64_t>(key.utid));
    h = mix(h, optional_bits(key.callsite_id));
    h = mix(h, (static_cast<std::uint64_t>(key.kind) << 32) ^ static_cast<std::uint32_t>(key.api));
    h = mix(
        h, (static_cast<std::uint64_t>(key.device) << 32) ^ static_cast<std::uint32_t>(key.result));
    h = mix(h, key.stream);
    h = mix(h, key.flags);
    return mix(h, key.pool ? *key.pool : 0x8000000000000000ULL);
  }
  std::size_t operator()(const FreeSiteKey& key) const {
    std::size_t h = mix(0, static_cast<std::uint64_t>(key.utid));
    h = mix(h, optional_bits(key.callsite_id));
    return mix(h, static_cast<std::uint64_t>(key.api));
  }
};

}  // namespace

struct AllocationSites::State {
  explicit State(WriteFailure& writer_failure) : failure(writer_failure) {}

  WriteFailure& failure;
  Statement add_site, add_free_site;
  // The allocation_site and free_site rows written so far, by what they hold.
  std::unordered_map<SiteKey, std::int64_t, SiteKeyHash> sites;
  std::unordered_map<FreeSiteKey, std::int64_t, SiteKeyHash> free_sites;
  // The last site met and its id: a storm repeats one site, which is then compared, not hashed.
  std::optional<std::pair<SiteKey, std::int64_t>> last_site;
  std::optional<std::pair<FreeSiteKey, std::int64_t>> last_free_site;

  std::int64_t site_id(const AllocationRow& row) {
    const SiteKey key(row);
    if (last_site && last_site->first == key) return last_site->second;
    const auto [it, added] = sites.try_emplace(key, 0);
    last_site.emplace(key, it->second);
    if (!added) return it->second;
    it->second = static_cast<std::int64_t>(sites.size());
    Statement& statement = add_site;
    statement.bind_int64(1, it->second);
    statement.bind_int64(2, row.kind);
    statement.bind_int64(3, row.api);
    statement.bind_int64(4, row.device);
    statement.bind_uint64(5, row.stream);
    statement.bind_int64(6, row.flags);
    statement.bind_optional_uint64(7, row.pool);
    statement.bind_int64(8, row.result);
    statement.bind_int64(9, row.alloc_utid);
    statement.bind_optional_int64(10, row.alloc_callsite_id);
    failure.run(statement, "adding an allocation site");
    last_site->second = it->second;
    return it->second;
  }

  std::int64_t free_site_id(const FreeRow& row) {
    const FreeSiteKey key(row);
    if (last_free_site && last_free_site->first == key) return last_free_site->second;
    const auto [it, added] = free_sites.try_emplace(key, 0);
    last_free_site.emplace(key, it->second);
    if (!added) return it->second;
    it->second = static_cast<std::int64_t>(free_sites.size());
    Statement& statement = add_free_site;
    statement.bind_int64(1, it->second);
    statement.bind_int64(2, row.free_utid);
    statement.bind_optional_int64(3, row.free_callsite_id);
    statement.bind_int64(4, row.free_api);
    failure.run(statement, "adding a free site");
    last_free_site->second = it->second;
    return it->second;
  }
};

AllocationSites::AllocationSites(std::unique_ptr<State> state) : state_(std::move(state)) {}
AllocationSites::~AllocationSites() = default;

std::unique_ptr<AllocationSites> AllocationSites::create(WriteFailure& failure,
                                                         std::string* error) {
  auto state = std::make_unique<State>(failure);
  if (Statement::prepare(failure.db,
                         "INSERT INTO allocation_site(id, kind, api, device, stream, flags, pool, "
                         "result, utid, callsite_id) "
                         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                         &state->add_site) != SQLITE_OK ||
      Statement::prepare(failure.db,
                         "INSERT INTO free_site(id, utid, callsite_id, api) "
                         "VALUES(?1, ?2, ?3, ?4)",
                         &state->add_free_site) != SQLITE_OK) {
    if (error != nullptr) *error = sqlite3_errmsg(failure.db);
    return nullptr;
  }
  return std::unique_ptr<AllocationSites>(new AllocationSites(std::move(state)));
}

std::int64_t AllocationSites::site_id(const AllocationRow& row) {
  return state_->site_id(row);
}

std::int64_t AllocationSites::free_site_id(const FreeRow& row) {
  return state_->free_site_id(row);
}

}  // namespace vramtrace::storage
