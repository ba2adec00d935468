// The driver's private tables (cuGetExportTable): what NVIDIA's runtime asks the driver for
// before anything else, and without which cuBLAS, cuBLASLt and cuDNN (each carries its own
// statically linked runtime) refuse to start. They are undocumented. What each table holds
// comes from two sources, said at each entry: ZLUDA (vosen/ZLUDA, its dark_api), which names
// the tables and the entries it found, and what cuBLAS 13.1, cuBLASLt and cuDNN 9 were seen to
// call here (tests/simcuda/README.md, "NVIDIA's math libraries"). An entry whose meaning is
// unknown answers CUDA_ERROR_NOT_SUPPORTED, which every caller seen so far takes as "not
// available" and goes on without.
#pragma once

#include "cuda.h"

namespace simcuda::driver {

// The table cuGetExportTable hands out for `id`, or nullptr for a table the simulation does not
// have (CUDA_ERROR_NOT_FOUND, which the runtime accepts for the optional ones).
const void* export_table(const CUuuid& id);

// Runs and forgets the destructors of what the runtime stored in the context (context-local
// storage) when the context is reset, as the real driver does.
void reset_context_local_storage(CUcontext context);

}  // namespace simcuda::driver
