#include "module_map.h"

#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace vramtrace::preload {
namespace {

constexpr uint32_t kNtGnuBuildId = 3;

struct Counters {
  uint64_t adds, subs;
};

Counters loader_counters() {
  Counters c{0, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) -> int {
        auto* out = static_cast<Counters*>(data);
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
          out->adds = info->dlpi_adds;
          out->subs = info->dlpi_subs;
        }
        return 1;  // the counters are the same in every entry: stop at the first
      },
      &c);
  return c;
}

// The GNU build-id note of a loaded object, found through its program headers.
void find_build_id(const dl_phdr_info* info, const unsigned char** id, uint32_t* bytes) {
  *id = nullptr;
  *bytes = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const unsigned char* name = p + sizeof(ElfW(Nhdr));
      const unsigned char* desc = name + ((note->n_namesz + 3) & ~3u);
      const unsigned char* next = desc + ((note->n_descsz + 3) & ~3u);
      if (next > end) break;
      if (note->n_type == kNtGnuBuildId && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        *id = desc;
        *bytes = note->n_descsz;
        return;
      }
      p = next;
    }
  }
}

uint64_t module_key(uint64_t start, const char* path) {
  uint64_t h = 1469598103934665603ull ^ start;  // FNV-1a over the path, seeded by the address
  for (const char* c = path; *c != '\0'; ++c)
    h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  return h | 1;  // never 0, which marks an empty slot
}

}  // namespace

uint64_t loader_unload_count() {
  return loader_counters().subs;
}

bool ModuleMap::changed() const {
  Counters c = loader_counters();
  return c.adds != adds_ || c.subs != subs_;
}

void ModuleMap::reset() {
  std::memset(sent_, 0, sizeof sent_);
  sent_count_ = 0;
  adds_ = subs_ = 0;
}

bool ModuleMap::already_sent(uint64_t key) const {
  for (uint32_t i = key % kMaxRemembered, n = 0; n < kMaxRemembered;
       i = (i + 1) % kMaxRemembered, ++n) {
    if (sent_[i] == key) return true;
    if (sent_[i] == 0) return false;
  }
  return false;
}

void ModuleMap::remember(uint64_t key) {
  if (sent_count_ >= kMaxRemembered * 3 / 4) return;  // full: resending is merely redundant
  uint32_t i = key % kMaxRemembered;
  while (sent_[i] != 0 && sent_[i] != key) i = (i + 1) % kMaxRemembered;
  if (sent_[i] == 0) ++sent_count_;
  sent_[i] = key;
}

bool ModuleMap::scan_impl(bool (*emit)(const ModuleInfo&, void*), void* ctx) {
  struct Scan {
    ModuleMap* self;
    bool (*emit)(const ModuleInfo&, void*);
    void* ctx;
    bool ok;
    bool first;
    char exe[4096];
  } scan{this, emit, ctx, true, true, {}};
  ssize_t n = readlink("/proc/self/exe", scan.exe, sizeof scan.exe - 1);
  scan.exe[n > 0 ? n : 0] = '\0';

  Counters c = loader_counters();
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Scan*>(data);
        const bool is_main = s->first;
        s->first = false;
        const char* path = info->dlpi_name;
        if (is_main && (path == nullptr || path[0] == '\0')) path = s->exe;
        // Objects without a file (the vDSO) cannot be symbolized from disk.
        if (path == nullptr || path[0] != '/') return 0;
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          lo = std::min<uint64_t>(lo, info->dlpi_addr + ph.p_vaddr);
          hi = std::max<uint64_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        if (hi == 0) return 0;
        uint64_t key = module_key(lo, path);
        if (s->self->already_sent(key)) return 0;
        ModuleInfo m{lo, hi, info->dlpi_addr, path, nullptr, 0};
        find_build_id(info, &m.build_id, &m.build_id_bytes);
        if (!s->emit(m, s->ctx)) {
          s->ok = false;
          return 1;
        }
        s->self->remember(key);
        return 0;
      },
      &scan);
  if (scan.ok) {
    adds_ = c.adds;
    subs_ = c.subs;
  }
  return scan.ok;
}

}  // namespace vramtrace::preload
