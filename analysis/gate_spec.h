// The limits of `vramtrace run --gate SPEC`, as one comma-separated string:
//
//   leaked_bytes=0,leaked_count<=10,peak<=2GiB
//
// Each term is NAME=VALUE or NAME<=VALUE (the same: the most allowed). Names: leaked_bytes
// and peak (sizes, with units: byte_size.h), growth (bytes per occurrence of the marker
// "iteration", as `gate --max-growth`), leaked_count (a count). Spaces around terms are
// ignored.
#pragma once

#include <string>
#include <string_view>

#include "analysis/gate.h"

namespace vramtrace::analysis {

// Sets the limits `spec` names in *limits. False on a malformed spec, with *error saying which
// term and why in a sentence.
bool parse_gate_spec(std::string_view spec, GateLimits* limits, std::string* error);

}  // namespace vramtrace::analysis
