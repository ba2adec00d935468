#include "stack_names.h"

#include <pthread.h>
#include <sys/mman.h>

#include <atomic>

#include "frame_rule_cache.h"
#include "thread_exit_key.h"

namespace vramtrace::preload {
namespace {

// A table: 2048 sets of two entries. A thread of a training loop meets a few hundred stacks;
// the second way keeps two hot stacks whose hashes meet in one set from evicting each other.
constexpr uint32_t kSets = 2048;
constexpr uint32_t kEntries = 2 * kSets;
// Names are table * kEntries + entry + 1, in 32 bits and never 0: at most 2^20 - 1 tables
// (threads recording at once; an exited thread's table is taken by the next thread).
constexpr uint32_t kMaxTables = (1u << 20) - 1;
static_assert(uint64_t{kMaxTables} * kEntries < (uint64_t{1} << 32));

struct Entry {
  uint64_t lo, hi;  // the stack's hash
  uint64_t epoch;   // current_epoch() when the stack was sent; 0: empty
};

struct Table {
  uint32_t number;  // names of this table's entries start at number * kEntries + 1
  uint32_t flip;    // which way of a full set the next new stack takes
  Table* next_free;
  // The stack named last, where its walk had an id (name_stack's walk_id) and no Python frames:
  // the id, its entry and what the entry held then. 0: none.
  uint64_t last_walk_id;
  uint32_t last_entry;
  Entry last;
  Entry entries[kEntries];
};

Table* const kGone = reinterpret_cast<Table*>(uintptr_t(1));
constinit thread_local Table* t_table __attribute__((tls_model("initial-exec"))) = nullptr;

std::atomic<bool> g_enabled{true};
// Moves at each fork, in the child.
std::atomic<uint64_t> g_fork_epoch{0};

// Tables of exited threads, for the next thread; and how many were made.
pthread_mutex_t g_pool_mutex = PTHREAD_MUTEX_INITIALIZER;
Table* g_free_tables = nullptr;
uint32_t g_tables_made = 0;

// Entries made in another epoch are stale: objects were unloaded since (their addresses may
// now hold other code), or the process forked. Never 0, the empty entries' epoch.
uint64_t current_epoch() {
  return frame_rules_generation() + g_fork_epoch.load(std::memory_order_relaxed) + 1;
}

void give_back_table(void* memory) {
  t_table = kGone;  // exit handlers that record after this one send whole stacks
  auto* table = static_cast<Table*>(memory);
  pthread_mutex_lock(&g_pool_mutex);
  table->next_free = g_free_tables;
  g_free_tables = table;
  pthread_mutex_unlock(&g_pool_mutex);
}

using TableKey = ThreadExitKey<&give_back_table>;
__attribute__((destructor)) void forget_table_key() {
  TableKey::forget();
}

Table* take_table() {
  pthread_mutex_lock(&g_pool_mutex);
  Table* table = g_free_tables;
  if (table != nullptr) {
    g_free_tables = table->next_free;
  } else if (g_tables_made < kMaxTables) {
    void* memory =
        mmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory != MAP_FAILED) {
      table = static_cast<Table*>(memory);  // mapped zeroed: every entry empty
      table->number = g_tables_made++;
    }
  }
  pthread_mutex_unlock(&g_pool_mutex);
  return table;
}

Table* thread_table() {
  Table* table = t_table;
  if (table != nullptr) return table == kGone ? nullptr : table;
  t_table = kGone;
  table = take_table();
  if (table == nullptr) return nullptr;
  if (!TableKey::set(table)) {
    give_back_table(table);  // leaves t_table kGone
    return nullptr;
  }
  t_table = table;
  return table;
}

constexpr uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}
// Each step is a bijection of the word for a given lane state, so two stacks that differ in
// one word always differ in that lane; the lanes are independent, so a deep stack hashes at
// about a cycle a word.
constexpr uint64_t step(uint64_t lane, uint64_t word) {
  return rotl((lane ^ word) * 0x9e3779b97f4a7c15ull, 31);
}
constexpr uint64_t fmix(uint64_t x) {  // MurmurHash3's finalizer
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

struct Hash {
  uint64_t lo, hi;
};

Hash hash_stack(const uintptr_t* ips, int depth, const PythonFrames* python) {
  uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull;
  uint64_t c = 0xa4093822299f31d0ull, d = 0x082efa98ec4e6c89ull;
  int i = 0;
  for (; i + 4 <= depth; i += 4) {
    a = step(a, ips[i]);
    b = step(b, ips[i + 1]);
    c = step(c, ips[i + 2]);
    d = step(d, ips[i + 3]);
  }
  for (; i < depth; ++i) a = step(a, ips[i]);
  int python_depth = 0;
  if (python != nullptr) {
    python_depth = sent_depth(*python);
    for (int f = 0; f < python_depth; ++f) {
      b = step(b, python->code[f]);
      d = step(d, python->line[f]);
    }
  }
  const uint64_t lengths = uint64_t(uint32_t(depth)) | uint64_t(uint32_t(python_depth)) << 32;
  const uint64_t x = fmix(a) ^ rotl(fmix(b), 17);
  const uint64_t y = fmix(c) ^ rotl(fmix(d), 29);
  return {fmix(x + y * 0xc2b2ae3d27d4eb4full + lengths), fmix(y ^ rotl(x, 23) ^ ~lengths)};
}

}  // namespace

StackName name_stack(const uintptr_t* ips, int depth, const PythonFrames* python,
                     uint64_t walk_id) {
  if (!g_enabled.load(std::memory_order_relaxed)) return {};
  if (depth <= 0 && (python == nullptr || python->depth <= 0)) return {};  // nothing to name
  Table* table = thread_table();
  if (table == nullptr) return {};
  const uint64_t epoch = current_epoch();
  const uint32_t first_name = table->number * kEntries + 1;
  // Python frames are not the walk's: only a stack without them is known by its walk id.
  const bool by_walk = walk_id != 0 && (python == nullptr || python->depth <= 0);
  if (by_walk && table->last_walk_id == walk_id) {
    const Entry& e = table->entries[table->last_entry];
    // Unless the entry was given to another stack since, or made stale.
    if (e.epoch == epoch && e.lo == table->last.lo && e.hi == table->last.hi)
      return {0, first_name + table->last_entry};
  }
  const Hash h = hash_stack(ips, depth, python);
  const uint32_t set = static_cast<uint32_t>(h.lo) & (kSets - 1);
  Entry* ways = &table->entries[2 * set];
  StackName named;
  uint32_t way = 0;
  while (way < 2 && !(ways[way].epoch == epoch && ways[way].lo == h.lo && ways[way].hi == h.hi))
    ++way;
  if (way < 2) {
    named = {0, first_name + 2 * set + way};
  } else {
    // A new stack: it takes an empty or stale way, else the one not taken last.
    way = ways[0].epoch != epoch ? 0 : ways[1].epoch != epoch ? 1 : (table->flip ^= 1);
    ways[way] = {h.lo, h.hi, epoch};
    named = {first_name + 2 * set + way, 0};
  }
  table->last_walk_id = by_walk ? walk_id : 0;
  table->last_entry = 2 * set + way;
  table->last = ways[way];
  return named;
}

void set_stack_names_enabled(bool enabled) {
  g_enabled.store(enabled, std::memory_order_relaxed);
}

void forget_stack_names_after_fork() {
  g_fork_epoch.fetch_add(1, std::memory_order_relaxed);
  // Another thread of the parent may have held the pool's lock, or been changing the list, at
  // the fork: the child starts a new pool (the tables of the parent's other threads are lost
  // to it, as those threads are).
  g_pool_mutex = PTHREAD_MUTEX_INITIALIZER;
  g_free_tables = nullptr;
}

int stack_name_tables_for_testing() {
  pthread_mutex_lock(&g_pool_mutex);
  const int made = static_cast<int>(g_tables_made);
  pthread_mutex_unlock(&g_pool_mutex);
  return made;
}

}  // namespace vramtrace::preload
