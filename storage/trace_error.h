// What a reader throws when a trace cannot be read on: truncated, corrupt or damaged. Apart from
// trace_reader.h so that the pieces the reader is made of can throw it too.
#pragma once

#include <stdexcept>

namespace vramtrace::storage {

class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace vramtrace::storage
