// NVTX domains and registered strings: the objects behind the handles that the shim gives
// programs, in fixed process-wide tables (no heap).
//
// - A domain is created once per name: creating a name again returns the same handle, so a
//   program that creates its domain per call cannot run the table out. Handles stay valid
//   for good (nvtxDomainDestroy is not implemented): a thread may still use a handle while
//   another destroys it, and a slot reused for another name would file its events wrongly.
// - Registered strings are likewise kept once per (domain, text).
// - Past the tables' bounds nothing fails: the extra domains share one entry named
//   "overflow", the extra strings one whose text is "overflow", and a Notice (data loss)
//   tells the trace once.
//
// Creation takes a lock (it is rare); looking a handle up takes none, since an entry is
// never changed after it is published.
#pragma once

#include <cstddef>
#include <cstdint>

#include "marker_text.h"
#include "nvtx_abi.h"

namespace vramtrace::preload {

inline constexpr size_t kMaxNvtxDomains = 256;  // the last entry is "overflow"
inline constexpr size_t kMaxRegisteredStrings = 4096;
inline constexpr size_t kRegisteredStringBytes = 256 * 1024;

struct NvtxDomain {
  uint32_t index;  // 0 .. kMaxNvtxDomains - 1: the domain's own range nesting
  MarkerText name;
};

// The domain named `name`, created if new. Never null.
nvtx::DomainHandle create_nvtx_domain(const MarkerText& name);

// The domain behind a handle; null for NVTX's default domain (a null handle). A handle the
// shim did not give out is read as the overflow domain, never dereferenced.
const NvtxDomain* find_nvtx_domain(nvtx::DomainHandle handle);

// A handle for `text` in `domain`'s string table. Never null.
nvtx::StringHandle register_nvtx_string(nvtx::DomainHandle domain, const MarkerText& text);

// The text behind a registered-string handle; "" for a handle the shim did not give out.
const char* registered_nvtx_string(nvtx::StringHandle handle);

}  // namespace vramtrace::preload
