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
 * - All functions are thread-safe, never block for long, and never fail the caller: when
 *   the shim does not record (no collector, or recording stopped) they record nothing.
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

/* The functions' types, for dlsym. */
typedef int (*vramtrace_is_recording_fn)(void);
typedef void (*vramtrace_mark_fn)(const char* name);
typedef int (*vramtrace_range_push_fn)(const char* name);
typedef int (*vramtrace_range_pop_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* VRAMTRACE_VRAMTRACE_H */
