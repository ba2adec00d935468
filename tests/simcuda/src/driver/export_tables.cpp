#include "export_tables.h"

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "device_properties.h"
#include "driver.h"
#include "integrity_check.h"
#include "loaded_code.h"

namespace simcuda::driver {
namespace {

using Entry = const void*;

// An identifier in the byte order the runtime passes it.
struct TableId {
  unsigned char bytes[16];
  bool operator==(const CUuuid& id) const { return std::memcmp(bytes, id.bytes, 16) == 0; }
};

// The first entry of most tables is the table's size in bytes.
constexpr Entry size_word(std::size_t entries) {
  return reinterpret_cast<Entry>(entries * sizeof(Entry));
}

template <class Function>
Entry entry(Function* function) {
  return reinterpret_cast<Entry>(function);
}

// An entry whose meaning is not known: whatever its arguments, it does nothing.
CUresult not_supported() {
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult current_device(int* device) {
  Driver& driver = Driver::get();
  if (const CUresult result = driver.initialized(); result != CUDA_SUCCESS) return result;
  return driver.context_device(nullptr, device);
}

// --- CUDART_INTERFACE (ZLUDA): how the runtime loads the fat binaries nvcc registered and
// finds primary contexts.

// [1]: a module from a fat binary wrapper (what __cudaRegisterFatBinary receives).
CUresult module_from_fatbin_wrapper(CUmodule* module, const void* wrapper) {
  if (module == nullptr || wrapper == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int device = 0;
  if (const CUresult result = current_device(&device); result != CUDA_SUCCESS) return result;
  return LoadedCode::get().load_module(wrapper, device, module);
}

// [2]: the device's primary context, not retained.
CUresult primary_context(CUcontext* context, CUdevice device) {
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& driver = Driver::get();
  if (const CUresult result = driver.initialized(); result != CUDA_SUCCESS) return result;
  if (!driver.valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  *context = driver.primary_context(device);
  return CUDA_SUCCESS;
}

// [6]: [1] with extra arguments, which are null in every call seen.
CUresult module_from_fatbin_wrapper_extended(CUmodule* module, const void* wrapper, void* extra1,
                                             void* extra2, unsigned int extra3) {
  if (extra1 != nullptr || extra2 != nullptr || extra3 != 0) return CUDA_ERROR_NOT_SUPPORTED;
  return module_from_fatbin_wrapper(module, wrapper);
}

// [7]: does nothing.
void runtime_notice(std::size_t) {}

// [8]: a module from a fat binary itself, the module argument second.
CUresult module_from_fatbin(const void* fatbin, CUmodule* module, void* extra1, void* extra2,
                            unsigned int extra3) {
  if (extra1 != nullptr || extra2 != nullptr || extra3 != 0) return CUDA_ERROR_NOT_SUPPORTED;
  if (module == nullptr || fatbin == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int device = 0;
  if (const CUresult result = current_device(&device); result != CUDA_SUCCESS) return result;
  return LoadedCode::get().load_module(fatbin, device, module);
}

// [12]: loads the PTX compiler; there is none to load.
CUresult load_compilers() {
  return CUDA_SUCCESS;
}

const Entry kRuntimeInterface[13] = {size_word(13),
                                     entry(&module_from_fatbin_wrapper),
                                     entry(&primary_context),
                                     entry(&not_supported),
                                     entry(&not_supported),
                                     entry(&not_supported),
                                     entry(&module_from_fatbin_wrapper_extended),
                                     entry(&runtime_notice),
                                     entry(&module_from_fatbin),
                                     entry(&not_supported),
                                     entry(&not_supported),
                                     entry(&not_supported),
                                     entry(&load_compilers)};

// --- TOOLS_RUNTIME_CALLBACK_HOOKS (ZLUDA): buffers the runtime writes for profilers to read.
std::uint32_t hook_buffer_large[1024];
std::uint32_t hook_buffer_small[14];

void large_hook_buffer(void** buffer, std::size_t* count) {
  *buffer = hook_buffer_large;
  *count = std::size(hook_buffer_large);
}

void small_hook_buffer(void** buffer, std::size_t* count) {
  *buffer = hook_buffer_small;
  *count = std::size(hook_buffer_small);
}

const Entry kRuntimeCallbackHooks[7] = {
    size_word(7),          entry(&not_supported), entry(&large_hook_buffer), entry(&not_supported),
    entry(&not_supported), entry(&not_supported), entry(&small_hook_buffer)};

// --- TOOLS_TLS (ZLUDA names it; its [2] was seen): the calling thread's block of tool state.
// cuBLAS's and cuBLASLt's runtimes ask for it around each call; cuBLASLt's heuristics need it.
thread_local void* tools_thread_state[64];

CUresult tools_thread_block(void** block) {
  if (block == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *block = tools_thread_state;
  return CUDA_SUCCESS;
}

const Entry kToolsThreadState[4] = {size_word(4), entry(&not_supported), entry(&tools_thread_block),
                                    entry(&not_supported)};

// --- CONTEXT_LOCAL_STORAGE (ZLUDA): values the runtime keeps per context. No size word.
using StorageDestructor = void (*)(CUcontext, void* key, void* value);

struct Stored {
  void* value;
  StorageDestructor destructor;
};

std::mutex storage_mutex;
std::map<std::pair<CUcontext, void*>, Stored>& storage() {
  static auto* const values = new std::map<std::pair<CUcontext, void*>, Stored>;
  return *values;
}

// A null context is the calling thread's current one.
CUresult storage_context(CUcontext* context) {
  if (*context != nullptr) return CUDA_SUCCESS;
  Driver& driver = Driver::get();
  if (const CUresult result = driver.initialized(); result != CUDA_SUCCESS) return result;
  *context = Driver::current_context();
  return *context != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult storage_put(CUcontext context, void* key, void* value, StorageDestructor destructor) {
  if (const CUresult result = storage_context(&context); result != CUDA_SUCCESS) return result;
  std::lock_guard lock(storage_mutex);
  storage()[{context, key}] = Stored{value, destructor};
  return CUDA_SUCCESS;
}

CUresult storage_delete(CUcontext context, void* key) {
  if (const CUresult result = storage_context(&context); result != CUDA_SUCCESS) return result;
  std::lock_guard lock(storage_mutex);
  storage().erase({context, key});
  return CUDA_SUCCESS;
}

CUresult storage_get(void** value, CUcontext context, void* key) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult result = storage_context(&context); result != CUDA_SUCCESS) return result;
  std::lock_guard lock(storage_mutex);
  const auto found = storage().find({context, key});
  if (found == storage().end()) return CUDA_ERROR_INVALID_HANDLE;
  *value = found->second.value;
  return CUDA_SUCCESS;
}

const Entry kContextLocalStorage[4] = {entry(&storage_put), entry(&storage_delete),
                                       entry(&storage_get), entry(&not_supported)};

// --- CONTEXT_CHECKS (ZLUDA): flags of a context the runtime checks; none is ever set.
CUresult context_check(CUcontext, std::uint32_t* flags, const void**) {
  if (flags != nullptr) *flags = 0;
  return CUDA_SUCCESS;
}

std::uint32_t context_check_flags() {
  return 0;
}

const Entry kContextChecks[4] = {size_word(4), entry(&not_supported), entry(&context_check),
                                 entry(&context_check_flags)};

// --- INTEGRITY_CHECK (ZLUDA): integrity_check.h.
CUresult integrity_check(std::uint32_t caller_version, std::uint64_t unix_seconds,
                         std::uint64_t* value);

const Entry kIntegrityCheck[3] = {size_word(3), entry(&integrity_check), entry(&not_supported)};

CUresult integrity_check(std::uint32_t caller_version, std::uint64_t unix_seconds,
                         std::uint64_t* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& driver = Driver::get();
  if (const CUresult result = driver.initialized(); result != CUDA_SUCCESS) return result;
  IntegrityInputs inputs{static_cast<std::uint32_t>(kDriverVersion),
                         caller_version,
                         static_cast<std::uint32_t>(getpid()),
                         static_cast<std::uint32_t>(pthread_self()),
                         kRuntimeInterface,
                         kIntegrityCheck,
                         kIntegrityCheck[1],
                         unix_seconds,
                         {}};
  for (int device = 0; device < driver.device_count(); ++device) {
    inputs.devices.push_back(DeviceIdentity{device_uuid(device), 0, pci_bus(device), 0});
  }
  const std::array<std::uint64_t, 2> answer = integrity_value(inputs);
  value[0] = answer[0];
  value[1] = answer[1];
  return CUDA_SUCCESS;
}

// --- Two tables ZLUDA does not know, asked for by cuBLASLt (seen here). Their length is not
// known; callers read only the entries below.
// A table of `size` entries, each `not_supported` but those given.
template <std::size_t size>
std::array<Entry, size> table_of(std::initializer_list<std::pair<std::size_t, Entry>> known) {
  std::array<Entry, size> entries;
  entries.fill(entry(&not_supported));
  entries[0] = size_word(size);
  for (const auto& [index, function] : known) entries[index] = function;
  return entries;
}

// 21318c60-...: cuBLASLt's heuristics call [4](thread block from TOOLS_TLS, &object) and take
// a null object as "none", choosing their algorithm without it.
CUresult no_object(void*, void** object) {
  if (object != nullptr) *object = nullptr;
  return CUDA_SUCCESS;
}

const auto kHeuristicsHooks = table_of<16>({{4, entry(&no_object)}});

// 1734dc26-...: cuBLASLt's half-precision heuristics call [4](&a, &b) and, refused, go on.
const auto kHalfPrecisionHooks = table_of<16>({});

struct Table {
  TableId id;
  const Entry* entries;
};

const Table kTables[] = {
    {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d,
      0xf9},
     kRuntimeInterface},
    {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a,
      0x66},
     kRuntimeCallbackHooks},
    {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec,
      0xdc},
     kToolsThreadState},
    {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95,
      0x93},
     kContextLocalStorage},
    {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa,
      0x7e},
     kContextChecks},
    {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1,
      0xf2},
     kIntegrityCheck},
    {{0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8,
      0xf2},
     kHeuristicsHooks.data()},
    {{0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45, 0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b,
      0xca},
     kHalfPrecisionHooks.data()},
};

}  // namespace

const void* export_table(const CUuuid& id) {
  for (const Table& table : kTables) {
    if (table.id == id) return table.entries;
  }
  return nullptr;
}

void reset_context_local_storage(CUcontext context) {
  std::vector<std::pair<void*, Stored>> reset;
  {
    std::lock_guard lock(storage_mutex);
    auto& values = storage();
    for (auto it = values.lower_bound({context, nullptr});
         it != values.end() && it->first.first == context;) {
      reset.emplace_back(it->first.second, it->second);
      it = values.erase(it);
    }
  }
  // Outside the lock: a destructor may call the driver, and the storage again.
  for (const auto& [key, stored] : reset) {
    if (stored.destructor != nullptr) stored.destructor(context, key, stored.value);
  }
}

}  // namespace simcuda::driver
