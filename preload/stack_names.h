// Stack names: each thread sends a stack's frames once, under a name, and afterwards the name.
//
// A training loop allocates from the same few hundred call paths millions of times. Sending
// every frame of every stack costs the program the copy into the ring (about 130 bytes at
// depth 16, 520 at 64) and the collector a parse and a hash-table lookup of the whole stack;
// heaptrack sends each stack once for the same reason (its trace tree). Here each thread keeps
// a table of the stacks it has sent, by a 128-bit hash of their frames: a stack met again is
// sent as `same_stack_as` its name; a new one is sent whole, with the name of the table slot
// it takes (proto/vramtrace.proto, Alloc.stack_name).
//
// Why the collector can trust a name: a name belongs to one slot of one thread's table, and
// only that thread writes the slot and the records that use it; the ring keeps a thread's
// records in order, so a stack's definition always precedes its uses, and a slot given to a
// new stack is defined again before it is used. Tables outlive their threads (a new thread
// takes an old one, names and all: its definitions are earlier in the ring). A name is not
// reused after objects are unloaded (another may take their addresses) or in a forked child
// (its trace is another process's): entries carry the epoch they were made in.
//
// A 128-bit hash can collide: two different stacks of one thread with the same hash, at odds of
// about n^2 / 2^129 for n stacks, 10^-27 for a million. Frames that are the same pass the same
// hash, so nothing is ever named wrongly otherwise.
#pragma once

#include <cstdint>

#include "python_stack.h"

namespace vramtrace::preload {

// What to send for a stack. Both 0: send the frames without a name (no table, or naming off).
struct StackName {
  uint32_t name = 0;     // non-zero: send the frames, named so
  uint32_t same_as = 0;  // non-zero: send this name instead of the frames
};

// Names the calling thread's stack: `ips` (depth entries, already cut to the wire's limit) and
// its Python frames, if any. Call inside an outermost ReentryGuard, after the modules the stack
// points into were sent (a definition must be resolvable when the collector reads it).
// `walk_id`: Unwinder::capture's, or 0. A stack without Python frames whose walk id is the one
// the thread named last is that stack again: its name is found without hashing its frames
// (where its table entry still holds it).
StackName name_stack(const uintptr_t* ips, int depth, const PythonFrames* python,
                     uint64_t walk_id = 0);

// Turns naming off or on for the process (VRAMTRACE_STACK_NAMES=0 turns it off).
void set_stack_names_enabled(bool enabled);

// In a forked child: the names given so far belong to the parent's trace.
void forget_stack_names_after_fork();

// How many tables the process has made (each thread that recorded a stack takes one, and a
// thread that exits gives its table back for the next). For tests.
int stack_name_tables_for_testing();

}  // namespace vramtrace::preload
