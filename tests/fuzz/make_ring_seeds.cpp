// Writes the seed corpus of ring_fuzzer (tests/fuzz/corpus/ring/) in its input format:
// [u64 write_pos][u64 read_pos][the 64 KiB data area, without its trailing zeros]. Each seed is a
// ring as a traced process leaves it, written by the shim's own RingProducer with messages encoded
// by the one schema: a whole short life (start, a module, allocations with stacks, frees, failed
// frees with and without their own stacks, markers, a child's exit, the exit), a ring that wrapped
// around with padding, the caching allocator's blocks, VMM and an OOM, and stacks sent by name.
//
// Usage: make_ring_seeds DIR. Run it again when the wire schema or the ring layout changes.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "shm_ring.h"
#include "vramtrace.pb.h"

namespace {

namespace ring = vramtrace::ring;
namespace wire = vramtrace::wire;

constexpr uint64_t kCapacity = ring::kMinCapacity;
constexpr uint64_t kText = 0x400000;  // where the seeds' one module is mapped

class SeedRing {
 public:
  SeedRing() : mapping_(ring::kHeaderBytes + kCapacity) {
    producer_.init(mapping_.data(), kCapacity, 4242);
  }

  // Returns the record's sequence number.
  uint64_t put(const wire::Envelope& message) {
    const std::string bytes = message.SerializeAsString();
    uint64_t seq = 0;
    producer_.write(bytes.data(), static_cast<uint32_t>(bytes.size()), &seq, [] { return true; });
    return seq;
  }

  // Pretends the collector read everything so far: later records may wrap around.
  void consume_all() {
    auto* header = reinterpret_cast<ring::SharedHeader*>(mapping_.data());
    header->read_pos.store(header->write_pos.load());
  }

  void save(const std::string& path) const {
    const auto* header = reinterpret_cast<const ring::SharedHeader*>(mapping_.data());
    const uint64_t write_pos = header->write_pos.load(), read_pos = header->read_pos.load();
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&write_pos), 8);
    out.write(reinterpret_cast<const char*>(&read_pos), 8);
    // The fuzzer fills what an input leaves out with zeros: trailing zeros need not be stored.
    const unsigned char* data = mapping_.data() + ring::kHeaderBytes;
    size_t used = kCapacity;
    while (used > 0 && data[used - 1] == 0) --used;
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(used));
  }

 private:
  std::vector<unsigned char> mapping_;
  ring::RingProducer producer_;
};

wire::Envelope process_start() {
  wire::Envelope e;
  auto* s = e.mutable_process_start();
  s->set_pid(4242);
  s->set_ppid(1);
  s->set_exe("/nonexistent/seed_program");
  s->add_argv("seed_program");
  s->add_argv("--flag");
  s->set_hostname("seedhost");
  s->set_unwinder("libunwind");
  s->set_rank(0);
  s->set_world_size(2);
  return e;
}

wire::Envelope module() {
  wire::Envelope e;
  auto* m = e.mutable_module();
  m->set_start(kText);
  m->set_end(kText + 0x10000);
  m->set_load_bias(kText);
  m->set_path("/nonexistent/seed_program");
  m->set_build_id(std::string("\x01\x02\x03\x04", 4));
  return e;
}

template <class Message>
void add_stack(Message* m, int depth, int salt) {
  for (int d = 0; d < depth; ++d) m->add_stack(kText + 0x100 + static_cast<uint64_t>(salt + d) * 8);
}

wire::Envelope alloc(wire::Kind kind, wire::Api api, uint64_t address, uint64_t size, int salt) {
  wire::Envelope e;
  auto* a = e.mutable_alloc();
  a->set_tid(4242 + salt % 3);
  a->set_kind(kind);
  a->set_api(api);
  a->set_address(address);
  a->set_size(size);
  a->set_requested_size(size);
  add_stack(a, 4 + salt % 5, salt);
  return e;
}

wire::Envelope free_of(wire::Api api, uint64_t address, int salt) {
  wire::Envelope e;
  auto* f = e.mutable_free();
  f->set_tid(4242 + salt % 3);
  f->set_api(api);
  f->set_address(address);
  add_stack(f, 3, salt);
  return e;
}

wire::Envelope marker(wire::Marker::Type type, const char* name, uint64_t range_id) {
  wire::Envelope e;
  auto* m = e.mutable_marker();
  m->set_tid(4242);
  m->set_type(type);
  m->set_name(name);
  m->set_range_id(range_id);
  return e;
}

void whole_life(const std::string& dir) {
  SeedRing r;
  r.put(process_start());
  r.put(module());
  r.put(marker(wire::Marker::TYPE_RANGE_PUSH, "epoch", 0));
  for (int i = 0; i < 12; ++i)
    r.put(alloc(wire::KIND_DEVICE, wire::API_CUDA_MALLOC, 0x7f0000000000 + i * 0x1000, 4096, i));
  for (int i = 0; i < 12; i += 2)
    r.put(free_of(wire::API_CUDA_FREE, 0x7f0000000000 + i * 0x1000, i));
  wire::Envelope failed;
  failed.mutable_free_failed()->set_free_seq(20);
  failed.mutable_free_failed()->set_result(1);
  r.put(failed);
  // Frees without stacks (the shim's default) whose calls fail: FreeFailed brings the stack,
  // for a live allocation and for an address never allocated.
  for (const uint64_t address : {0x7f0000001000ull, 0xbeef0000ull}) {
    wire::Envelope quiet = free_of(wire::API_CUDA_FREE, address, 1);
    quiet.mutable_free()->clear_stack();
    wire::Envelope quiet_failed;
    quiet_failed.mutable_free_failed()->set_free_seq(r.put(quiet));
    quiet_failed.mutable_free_failed()->set_result(1);
    add_stack(quiet_failed.mutable_free_failed(), 4, 7);
    r.put(quiet_failed);
  }
  r.put(free_of(wire::API_CUDA_FREE, 0xdead0000, 1));                        // a free of nothing
  r.put(alloc(wire::KIND_DEVICE, wire::API_CUDA_MALLOC, 0, 1ull << 50, 3));  // out of memory
  r.put(marker(wire::Marker::TYPE_RANGE_POP, "", 0));
  r.put(marker(wire::Marker::TYPE_MARK, "checkpoint", 0));
  wire::Envelope child;
  child.mutable_child_exit()->set_pid(4343);
  child.mutable_child_exit()->set_wait_status(9);
  r.put(child);
  wire::Envelope notice;
  notice.mutable_notice()->set_name("unwinder_missing");
  notice.mutable_notice()->set_text("no libunwind");
  r.put(notice);
  wire::Envelope exit;
  exit.mutable_process_exit()->set_exit_status(0);
  r.put(exit);
  r.save(dir + "/whole_life");
}

void wrapped_around(const std::string& dir) {
  SeedRing r;
  r.put(process_start());
  r.put(module());
  for (int i = 0; i < 400; ++i) {
    r.put(alloc(wire::KIND_MANAGED, wire::API_CUDA_MALLOC_MANAGED, 0x7e0000000000 + i * 64, 64, i));
    if (i % 50 == 49) r.consume_all();
  }
  r.save(dir + "/wrapped_around");
}

void allocator_and_vmm(const std::string& dir) {
  SeedRing r;
  r.put(process_start());
  r.put(module());
  r.put(alloc(wire::KIND_DEVICE, wire::API_CUDA_MALLOC, 0x7f0000000000, 2 << 20, 1));
  for (int i = 0; i < 6; ++i) {
    wire::Envelope block = alloc(wire::KIND_BLOCK, wire::API_C10_REPORT_MEMORY_USAGE,
                                 0x7f0000000000 + i * 512, 512, i);
    block.mutable_alloc()->set_allocator_allocated(static_cast<uint64_t>(i + 1) * 512);
    block.mutable_alloc()->set_allocator_reserved(2 << 20);
    r.put(block);
  }
  r.put(free_of(wire::API_C10_REPORT_MEMORY_USAGE, 0x7f0000000000, 2));
  wire::Envelope oom =
      alloc(wire::KIND_BLOCK, wire::API_C10_REPORT_OUT_OF_MEMORY, 0, 1ull << 36, 3);
  oom.mutable_alloc()->set_result(2);
  r.put(oom);
  r.put(alloc(wire::KIND_VMM_RESERVATION, wire::API_CU_MEM_ADDRESS_RESERVE, 0x7d0000000000,
              64 << 20, 4));
  r.put(alloc(wire::KIND_VMM_HANDLE, wire::API_CU_MEM_CREATE, 0x55, 2 << 20, 5));
  wire::Envelope map =
      alloc(wire::KIND_VMM_MAPPING, wire::API_CU_MEM_MAP, 0x7d0000000000, 2 << 20, 6);
  map.mutable_alloc()->set_handle(0x55);
  r.put(map);
  wire::Envelope unmap = free_of(wire::API_CU_MEM_UNMAP, 0x7d0000000000, 7);
  unmap.mutable_free()->set_size(2 << 20);
  r.put(unmap);
  r.save(dir + "/allocator_and_vmm");
}

// Stacks by name (preload/stack_names.h): definitions and uses from two threads, a name given
// to another stack, a use of a name never defined, a name far past the shim's tables, names on
// a free's stack and on a failed free's.
void stack_names(const std::string& dir) {
  SeedRing r;
  r.put(process_start());
  r.put(module());
  for (int i = 0; i < 16; ++i) {
    wire::Envelope a =
        alloc(wire::KIND_DEVICE, wire::API_CUDA_MALLOC, 0x7f0000000000 + i * 0x1000, 4096, i % 4);
    const auto name = static_cast<uint32_t>(1 + i % 4 + (i % 3 == 0 ? 4096 : 0));
    if (i < 8) {
      a.mutable_alloc()->set_stack_name(name);
    } else {
      a.mutable_alloc()->clear_stack();
      a.mutable_alloc()->set_same_stack_as(name);
    }
    r.put(a);
  }
  wire::Envelope renamed = alloc(wire::KIND_DEVICE, wire::API_CUDA_MALLOC, 0x7f0000100000, 512, 9);
  renamed.mutable_alloc()->set_stack_name(2);
  r.put(renamed);
  wire::Envelope unknown = alloc(wire::KIND_DEVICE, wire::API_CUDA_MALLOC, 0x7f0000200000, 512, 0);
  unknown.mutable_alloc()->clear_stack();
  unknown.mutable_alloc()->set_same_stack_as(777);
  r.put(unknown);
  wire::Envelope far = alloc(wire::KIND_DEVICE, wire::API_CUDA_MALLOC, 0x7f0000300000, 512, 5);
  far.mutable_alloc()->set_stack_name(0xfffffff0u);
  r.put(far);
  wire::Envelope named_free = free_of(wire::API_CUDA_FREE, 0x7f0000300000, 5);
  named_free.mutable_free()->clear_stack();
  named_free.mutable_free()->set_same_stack_as(0xfffffff0u);
  const uint64_t free_seq = r.put(named_free);
  wire::Envelope failed;
  failed.mutable_free_failed()->set_free_seq(free_seq);
  failed.mutable_free_failed()->set_result(1);
  failed.mutable_free_failed()->set_same_stack_as(2);
  r.put(failed);
  r.save(dir + "/stack_names");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  whole_life(argv[1]);
  wrapped_around(argv[1]);
  allocator_and_vmm(argv[1]);
  stack_names(argv[1]);
  return 0;
}
