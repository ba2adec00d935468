#include "frame_rule_cache.h"

#include <atomic>

namespace vramtrace::preload {
namespace {

constexpr int kWays = 4;
constexpr int kSetBits = 12;  // 4,096 sets, 16,384 rules, 256 KiB of zero pages until used
constexpr uint64_t kSets = uint64_t(1) << kSetBits;

struct Slot {
  std::atomic<uint64_t> pc{0};  // 0: empty (no code lives at address 0)
  std::atomic<uint64_t> rule{0};
};

Slot g_slots[kSets * kWays];
std::atomic<bool> g_writing{false};
std::atomic<uint32_t> g_next_victim{0};
std::atomic<uint64_t> g_generation{0};
std::atomic<uint64_t> g_rules_read{0};

Slot* set_of(uintptr_t pc) {
  const uint64_t set = (uint64_t(pc) * 0x9e3779b97f4a7c15ull) >> (64 - kSetBits);
  return &g_slots[set * kWays];
}

bool lookup(const Slot* set, uintptr_t pc, FrameRule* rule) {
  for (int way = 0; way < kWays; ++way) {
    const Slot& slot = set[way];
    if (slot.pc.load(std::memory_order_acquire) != pc) continue;
    const uint64_t word = slot.rule.load(std::memory_order_acquire);
    // A writer empties the slot's pc before it stores the rule (with release): a rule read from
    // a newer write means this load sees the emptied or the new pc, never the old one.
    if (slot.pc.load(std::memory_order_relaxed) != pc) return false;
    *rule = FrameRule::unpack(word);
    return true;
  }
  return false;
}

void insert(Slot* set, uintptr_t pc, const FrameRule& rule) {
  if (g_writing.exchange(true, std::memory_order_acquire)) return;  // never wait
  int way = 0;
  while (way < kWays && set[way].pc.load(std::memory_order_relaxed) != 0) ++way;
  if (way == kWays) way = int(g_next_victim.fetch_add(1, std::memory_order_relaxed) % kWays);
  Slot& slot = set[way];
  slot.pc.store(0, std::memory_order_relaxed);
  slot.rule.store(rule.pack(), std::memory_order_release);
  slot.pc.store(pc, std::memory_order_release);
  g_writing.store(false, std::memory_order_release);
}

}  // namespace

FrameRule cached_frame_rule(uintptr_t pc) {
  Slot* set = set_of(pc);
  FrameRule rule;
  if (lookup(set, pc, &rule)) return rule;
  rule = find_frame_rule(pc);
  // Counted after the read: a thread that sees the count move also sees, in the loader, the
  // object the rule came from.
  g_rules_read.fetch_add(1, std::memory_order_release);
  insert(set, pc, rule);
  return rule;
}

void forget_frame_rules() {
  // Without the writers' flag, so that it never waits: a rule a writer read before the unload
  // and stores after this could be stale, as it could be had the writer stored it a moment
  // earlier; the stack walk only ever reads inside the thread's stack, so a stale rule costs a
  // wrong frame at worst, in the rare program that loads code where other code was unloaded.
  for (Slot& slot : g_slots) slot.pc.store(0, std::memory_order_relaxed);
  g_generation.fetch_add(1, std::memory_order_release);
}

void forget_frame_rules_after_unloads(uint64_t unloads) {
  static std::atomic<uint64_t> unloads_seen{0};
  if (unloads_seen.exchange(unloads, std::memory_order_relaxed) != unloads) forget_frame_rules();
}

uint64_t frame_rules_read() {
  return g_rules_read.load(std::memory_order_acquire);
}

uint64_t frame_rules_generation() {
  return g_generation.load(std::memory_order_acquire);
}

}  // namespace vramtrace::preload
