// A thread-specific key whose destructor hands back a thread's memory when the thread exits.
//
// The shim keeps per-thread memory outside the C++ runtime's thread_local destructors (they may
// run after the program's own, and allocate): each user maps its block at the thread's first
// use, sets it here, and gets it back in `Destructor` at the thread's exit. The key is made on
// first use, once, and must be deleted by the user's own `__attribute__((destructor))` function
// through forget(): should the object holding the shim's code be unloaded (the CUPTI library,
// loaded by CUDA), threads that exit afterwards must not call into it.
#pragma once

#include <pthread.h>

namespace vramtrace::preload {

template <void (*Destructor)(void*)>
class ThreadExitKey {
 public:
  // Hands `value` to Destructor when the calling thread exits. False: the key could not be made
  // or set, and Destructor will not be called for it.
  static bool set(void* value) {
    pthread_once(&once_, [] { made_ = pthread_key_create(&key_, Destructor) == 0; });
    return made_ && pthread_setspecific(key_, value) == 0;
  }

  static void forget() {
    if (made_) pthread_key_delete(key_);
    made_ = false;
  }

 private:
  static inline pthread_key_t key_;
  static inline bool made_ = false;
  static inline pthread_once_t once_ = PTHREAD_ONCE_INIT;
};

}  // namespace vramtrace::preload
