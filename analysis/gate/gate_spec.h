// The limits of `vramtrace run --gate SPEC`, as one comma-separated string:
//
//   leaked_bytes=0,leaked_count<=10,peak<=2GiB,role.activation<=4GiB
//
// Each term is NAME=VALUE or NAME<=VALUE (the same: the most allowed). Names: leaked_bytes
// and peak (sizes, with units: byte_size.h), growth (bytes per iteration, as `gate
// --max-growth` without --iteration-marker), leaked_count (a count), role.ROLE (a size: that
// role's live bytes at each process's blocks' peak, as `gate --max-role ROLE=SIZE`; ROLE as
// block_role_name names it). Spaces around terms are ignored.
#pragma once

#include <string>
#include <string_view>

#include "analysis/gate/gate.h"

namespace vramtrace::analysis {

// Sets the limits `spec` names in *limits. False on a malformed spec, with *error saying which
// term and why in a sentence.
bool parse_gate_spec(std::string_view spec, GateLimits* limits, std::string* error);

// Sets the limit of the role named `role` ("activation") to the size `size` ("4GiB"). False on
// an unknown role or a malformed size, with *error saying which in a sentence.
bool set_role_limit(std::string_view role, std::string_view size, GateLimits* limits,
                    std::string* error);

}  // namespace vramtrace::analysis
