/* libc10_cuda_sim.so: a small caching allocator in the shape of PyTorch's CUDA caching
 * allocator, over the (simulated) CUDA runtime. Not PyTorch: a test stand-in.
 *
 * - Requests are rounded up to 512 bytes. Requests of at most 1 MiB come from the small pool,
 *   whose segments are 2 MiB cudaMallocs; larger ones from the large pool, whose segments are
 *   cudaMallocs of the request rounded up to 2 MiB.
 * - A free block big enough is split (small pool: when at least 512 bytes remain; large pool:
 *   when more than 1 MiB remains); freed blocks merge with free neighbours and stay cached:
 *   nothing is given back to CUDA until sim_empty_cache().
 * - Every block handed out or taken back is reported to c10::reportMemoryUsageToProfiler
 *   (libc10.so) with the allocator's totals; a request that cannot be met even after emptying
 *   the cache is reported to c10::reportOutOfMemoryToProfiler and fails.
 * Thread-safe; the reports are made under the allocator's lock, as PyTorch's are. */
#ifndef C10_CUDA_SIM_H
#define C10_CUDA_SIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sim_allocator_stats {
  uint64_t allocated_bytes; /* in blocks handed out (rounded sizes) */
  uint64_t reserved_bytes;  /* in segments held, cached or in use */
  uint64_t active_blocks;
  uint64_t segments;
} sim_allocator_stats;

/* A block of at least `size` bytes on `device`; NULL when it cannot be had (out of memory, or a
 * size of 0). */
void* sim_alloc(size_t size, int device);
/* Returns the block to the cache. 0, or -1 for a pointer the allocator did not hand out. */
int sim_free(void* ptr);
/* Gives every segment with no block in use back to CUDA (cudaFree). */
void sim_empty_cache(void);
/* The totals of `device`. 0, or -1 for a device out of range. */
int sim_stats(int device, sim_allocator_stats* out);

#ifdef __cplusplus
}
#endif

#endif
