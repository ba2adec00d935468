#include "nvtx_registry.h"

#include <pthread.h>

#include <atomic>
#include <cstring>

#include "marker_recorder.h"

namespace vramtrace::preload {
namespace {

constexpr uint32_t kOverflowDomain = kMaxNvtxDomains - 1;

struct RegisteredString {
  uint32_t domain_key;  // 0: the default domain; else the domain's index + 1
  uint32_t hash;
  const char* text;
};

// Twice as many slots as strings, so that a probe soon reaches an empty one.
constexpr size_t kIndexSlots = 2 * kMaxRegisteredStrings;
static_assert((kIndexSlots & (kIndexSlots - 1)) == 0);
static_assert(kMaxRegisteredStrings < 0xffff, "index slots hold entry + 1 in 16 bits");

// All constant-initialised: usable from NVTX calls made before or during constructors.
pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

NvtxDomain g_domains[kOverflowDomain];
std::atomic<uint32_t> g_domain_count{0};  // entries below it are published
constinit NvtxDomain g_overflow_domain{kOverflowDomain, MarkerText::constant("overflow")};

RegisteredString g_strings[kMaxRegisteredStrings];
std::atomic<uint32_t> g_string_count{0};  // entries below it are published
uint16_t g_string_index[kIndexSlots];     // entry + 1, 0 when empty; guarded by g_mutex
char g_string_bytes[kRegisteredStringBytes];
size_t g_string_bytes_used = 0;  // guarded by g_mutex
constinit RegisteredString g_overflow_string{0, 0, "overflow"};

std::atomic<bool> g_said_domains_full{false};
std::atomic<bool> g_said_strings_full{false};

// A fork while another thread registers must not leave the child's lock held for ever.
void lock_before_fork() {
  pthread_mutex_lock(&g_mutex);
}
void unlock_after_fork() {
  pthread_mutex_unlock(&g_mutex);
}

class Lock {
 public:
  Lock() {
    pthread_once(&g_atfork_once,
                 [] { pthread_atfork(&lock_before_fork, &unlock_after_fork, &unlock_after_fork); });
    pthread_mutex_lock(&g_mutex);
  }
  ~Lock() { pthread_mutex_unlock(&g_mutex); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;
};

// Said once per table, outside the lock: recording takes the ring's lock.
void say_full_once(std::atomic<bool>& said, const char* name, const char* text) {
  if (!said.exchange(true)) record_data_loss(name, text);
}

uint32_t fnv1a(uint32_t domain_key, const char* text) {
  uint32_t h = (2166136261u ^ domain_key) * 16777619u;
  for (const char* c = text; *c != '\0'; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  return h;
}

// The published entry `handle` points to, or null when it points to none.
template <class Entry>
const Entry* published_entry(const void* handle, const Entry* table, uint32_t count) {
  const auto address = reinterpret_cast<uintptr_t>(handle);
  const auto first = reinterpret_cast<uintptr_t>(table);
  if (address < first || (address - first) % sizeof(Entry) != 0) return nullptr;
  return (address - first) / sizeof(Entry) < count ? static_cast<const Entry*>(handle) : nullptr;
}

// Finds `text` of `domain_key` in the index, or the empty slot where it belongs.
uint16_t* index_slot(uint32_t domain_key, uint32_t hash, const char* text) {
  for (size_t i = hash & (kIndexSlots - 1);; i = (i + 1) & (kIndexSlots - 1)) {
    uint16_t* slot = &g_string_index[i];
    if (*slot == 0) return slot;
    const RegisteredString& s = g_strings[*slot - 1];
    if (s.hash == hash && s.domain_key == domain_key && std::strcmp(s.text, text) == 0) return slot;
  }
}

}  // namespace

nvtx::DomainHandle create_nvtx_domain(const MarkerText& name) {
  NvtxDomain* domain = nullptr;
  {
    Lock lock;
    const uint32_t count = g_domain_count.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < count && domain == nullptr; ++i)
      if (std::strcmp(g_domains[i].name.c_str(), name.c_str()) == 0) domain = &g_domains[i];
    if (domain == nullptr && count < kOverflowDomain) {
      domain = &g_domains[count];
      domain->index = count;
      domain->name = name;
      g_domain_count.store(count + 1, std::memory_order_release);
    }
  }
  if (domain == nullptr) {
    say_full_once(g_said_domains_full, "nvtx_domains_full",
                  "the program created more NVTX domains than the shim's table holds; the "
                  "later ones are recorded as the domain \"overflow\"");
    domain = &g_overflow_domain;
  }
  return reinterpret_cast<nvtx::DomainHandle>(domain);
}

const NvtxDomain* find_nvtx_domain(nvtx::DomainHandle handle) {
  if (handle == nullptr) return nullptr;
  const NvtxDomain* domain =
      published_entry(handle, g_domains, g_domain_count.load(std::memory_order_acquire));
  return domain != nullptr ? domain : &g_overflow_domain;
}

nvtx::StringHandle register_nvtx_string(nvtx::DomainHandle domain_handle, const MarkerText& text) {
  const NvtxDomain* domain = find_nvtx_domain(domain_handle);
  const uint32_t domain_key = domain == nullptr ? 0 : domain->index + 1;
  const uint32_t hash = fnv1a(domain_key, text.c_str());
  const RegisteredString* entry = nullptr;
  {
    Lock lock;
    uint16_t* slot = index_slot(domain_key, hash, text.c_str());
    const uint32_t count = g_string_count.load(std::memory_order_relaxed);
    if (*slot != 0) {
      entry = &g_strings[*slot - 1];
    } else if (count < kMaxRegisteredStrings &&
               g_string_bytes_used + text.size() + 1 <= kRegisteredStringBytes) {
      char* copy = g_string_bytes + g_string_bytes_used;
      std::memcpy(copy, text.c_str(), text.size() + 1);
      g_string_bytes_used += text.size() + 1;
      g_strings[count] = RegisteredString{domain_key, hash, copy};
      *slot = static_cast<uint16_t>(count + 1);
      g_string_count.store(count + 1, std::memory_order_release);
      entry = &g_strings[count];
    }
  }
  if (entry == nullptr) {
    say_full_once(g_said_strings_full, "nvtx_strings_full",
                  "the program registered more NVTX strings than the shim's table holds; the "
                  "later ones are recorded as \"overflow\"");
    entry = &g_overflow_string;
  }
  return reinterpret_cast<nvtx::StringHandle>(const_cast<RegisteredString*>(entry));
}

const char* registered_nvtx_string(nvtx::StringHandle handle) {
  if (handle == reinterpret_cast<nvtx::StringHandle>(&g_overflow_string))
    return g_overflow_string.text;
  const RegisteredString* entry =
      published_entry(handle, g_strings, g_string_count.load(std::memory_order_acquire));
  return entry != nullptr ? entry->text : "";
}

}  // namespace vramtrace::preload
