/* vramtrace's C API, exported by the shim (libvramtrace_preload.so) that `vramtrace run`
 * preloads into the program it records.
 *
 * Markers and ranges give a trace its phases: "epoch 3", "forward", "optimizer step". They
 * appear on the recording thread's timeline beside the allocations made meanwhile, and
 * reports can compare live memory at the same point of each iteration. Programs that already
 * use NVTX need nothing from here: `vramtrace run` records NVTX marks and ranges as well.
 *
 * Calling the API without linking against the shim
 * -------------------------------------------------
 * The shim is only present when the program runs under `vramtrace run`. Look the functions
 * up at run time, so the same binary also runs, untraced, without it:
 *
 *     #include <dlfcn.h>
 *     #include <vramtrace/vramtrace.h>
 *
 *     static vramtrace_range_push_fn push;
 *     static vramtrace_range_pop_fn pop;
 *
 *     void init_markers(void) {   // once, at start
 *       push = (vramtrace_range_push_fn)dlsym(RTLD_DEFAULT, "vramtrace_range_push");
 *       pop = (vramtrace_range_pop_fn)dlsym(RTLD_DEFAULT, "vramtrace_range_pop");
 *     }
 *
 *     void train_step(void) {
 *       if (push) push("train_step");
 *       ...
 *       if (pop) pop();
 *     }
 *
 * (C needs _GNU_SOURCE for RTLD_DEFAULT; glibc older than 2.34 needs -ldl.) A program may
 * also link the shim directly, but then it cannot start without it.
 *
 * Semantics
 * ---------
 * - All functions are thread-safe, never block for long (vramtrace_live_since waits for its
 *   answer, at most the time it is given), and never fail the caller: when the shim does
 *   not record (no collector, or recording stopped) they record nothing.
 * - Names are UTF-8 (bytes that are not are recorded as U+FFFD) and are cut at 255 bytes,
 *   on a character boundary. A null name is the empty name.
 * - Ranges nest per thread, on their own (not with NVTX's): a pop closes the innermost
 *   range that this thread pushed through this API.
 */
#ifndef VRAMTRACE_VRAMTRACE_H
#define VRAMTRACE_VRAMTRACE_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define VRAMTRACE_API __attribute__((visibility("default")))
#else
#define VRAMTRACE_API
#endif

/* 1 when the shim is recording this process for a collector, else 0. */
VRAMTRACE_API int vramtrace_is_recording(void);

/* An instant on this thread's timeline. */
VRAMTRACE_API void vramtrace_mark(const char* name);

/* Opens a range on this thread. Returns its 0-based nesting level (the number of ranges this
 * thread had open before it), as nvtxRangePush does, or -1 if it cannot be tracked. */
VRAMTRACE_API int vramtrace_range_push(const char* name);

/* Closes this thread's innermost range. Returns the level of the range closed (0 for the
 * outermost), as nvtxRangePop does, or -1 when this thread has no range open (nothing is
 * recorded then). */
VRAMTRACE_API int vramtrace_range_pop(void);

/* Live queries, for test harnesses (the pytest plugin's limit_gpu_leaks and limit_gpu_memory,
 * the GoogleTest listener's limits): take a checkpoint when a test starts; at its end, ask
 * the collector what was allocated since and is still live, and how much was live at once.
 * The question travels in the recording after every event before it, so the answer is
 * exact; the caller waits while the collector catches up.
 *
 * What counts is what `vramtrace leaks` counts: every live allocation except a caching
 * allocator's segments (its cache), so in a PyTorch process the tensors' blocks and any raw
 * cudaMalloc. The peak is of the allocator's blocks where the process has reported any,
 * else of device memory. */
typedef struct vramtrace_live_summary {
  unsigned long long live_bytes; /* allocated after the checkpoint and live now */
  unsigned long long live_count;
  unsigned long long peak_bytes; /* the most such bytes live at once since the checkpoint */
  int block_level;               /* 1: counted at the allocator's block level (PyTorch) */
} vramtrace_live_summary;

/* A checkpoint to ask about later, or 0 when this process is not being recorded. */
VRAMTRACE_API unsigned long long vramtrace_checkpoint(void);

/* What was allocated since `checkpoint` and is live now; closes the checkpoint. Fills
 * *summary, and writes a report of the largest live stacks (text, one frame a line) to
 * `report`, NUL-terminated, cut at report_size - 1 bytes (report may be NULL with size 0).
 * Waits at most timeout_ms for the collector. Returns the report's whole length (as snprintf
 * does), or: -1 not recording (or checkpoint 0), -2 no answer in time, -3 the collector does
 * not know the checkpoint (already asked about, or dropped: at most 64 are kept open per
 * process), -4 the collector went away (killed, or stopped recording) before it answered. */
VRAMTRACE_API long vramtrace_live_since(unsigned long long checkpoint,
                                        vramtrace_live_summary* summary, char* report,
                                        unsigned long report_size, int timeout_ms);

/* The functions' types, for dlsym. */
typedef int (*vramtrace_is_recording_fn)(void);
typedef void (*vramtrace_mark_fn)(const char* name);
typedef int (*vramtrace_range_push_fn)(const char* name);
typedef int (*vramtrace_range_pop_fn)(void);
typedef unsigned long long (*vramtrace_checkpoint_fn)(void);
typedef long (*vramtrace_live_since_fn)(unsigned long long checkpoint,
                                        vramtrace_live_summary* summary, char* report,
                                        unsigned long report_size, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* VRAMTRACE_VRAMTRACE_H */
